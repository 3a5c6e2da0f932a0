"""Validates the manifests of this folder against the Kubernetes JSON schemas (the strict,
standalone ones of github.com/yannh/kubernetes-json-schema, which kubeconform uses), fetched
for the Kubernetes version below: an unknown field, a missing one or a wrong type is an error
naming the file, the document and the field."""

import json
import pathlib
import sys
import urllib.request

import jsonschema
import yaml

KUBERNETES = "v1.30.0"
SCHEMAS = (
    "https://raw.githubusercontent.com/yannh/kubernetes-json-schema/master/"
    f"{KUBERNETES}-standalone-strict/"
)
HERE = pathlib.Path(__file__).resolve().parent


def schema_name(document):
    """deployment-apps-v1.json, service-v1.json, horizontalpodautoscaler-autoscaling-v2.json."""
    group, _, version = document["apiVersion"].rpartition("/")
    kind = document["kind"].lower()
    group = group.split(".")[0]
    return f"{kind}-{group}-{version}.json" if group else f"{kind}-{version}.json"


def main():
    fetched = {}
    problems = 0
    manifests = sorted(p for p in HERE.glob("*.yaml"))
    for path in manifests:
        for index, document in enumerate(yaml.safe_load_all(path.read_text())):
            if document is None:
                continue
            name = schema_name(document)
            if name not in fetched:
                with urllib.request.urlopen(SCHEMAS + name, timeout=60) as reply:
                    fetched[name] = json.load(reply)
            validator = jsonschema.Draft7Validator(fetched[name])
            for error in validator.iter_errors(document):
                field = ".".join(str(p) for p in error.absolute_path) or "(document)"
                print(f"{path.name}: document {index + 1} ({document['kind']}): {field}: {error.message}")
                problems += 1
    if problems:
        sys.exit(f"{problems} problem(s) in the Kubernetes manifests")
    print(f"{len(manifests)} manifests valid against the Kubernetes {KUBERNETES} schemas")


if __name__ == "__main__":
    main()
