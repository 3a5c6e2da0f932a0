#!/usr/bin/env sh
# Validates every manifest of this folder against the strict schemas of Kubernetes 1.30, with
# kubernetes-validate from PyPI (it carries the schemas, so nothing is fetched at check time),
# installed once into deploy/k8s/.venv.
set -eu
cd "$(dirname "$0")"
if [ ! -x .venv/bin/kubernetes-validate ]; then
  python3 -m venv .venv
  .venv/bin/pip install --quiet kubernetes-validate==1.37.0
fi
exec .venv/bin/kubernetes-validate --strict --quiet --kubernetes-version 1.30.0 ./*.yaml
