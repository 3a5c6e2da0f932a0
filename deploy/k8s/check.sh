#!/usr/bin/env sh
# Validates the manifests of this folder against the Kubernetes schemas: with kubeconform when
# it is installed, else with check.py (Python's jsonschema and PyYAML), both on the strict
# schemas of the Kubernetes version they name, fetched from GitHub.
set -eu
cd "$(dirname "$0")"
if command -v kubeconform >/dev/null 2>&1; then
  exec kubeconform -strict -summary -kubernetes-version 1.30.0 deployment.yaml service.yaml hpa.yaml
fi
if ! python3 -c 'import jsonschema, yaml' 2>/dev/null; then
  python3 -m pip install --quiet jsonschema pyyaml
fi
exec python3 check.py
