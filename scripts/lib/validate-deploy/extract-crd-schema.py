#!/usr/bin/env python3
"""Prints the openAPIV3Schema of one version of a CustomResourceDefinition as JSON, the
form deploy/schemas/ vendors (see its README.md):
    extract-crd-schema.py CRD.yaml VERSION > deploy/schemas/GROUP_VERSION_KIND.json"""
import json
import sys

import yaml

path, version = sys.argv[1:]
with open(path) as f:
    crd = next(d for d in yaml.safe_load_all(f) if d and d.get("kind") == "CustomResourceDefinition")
(schema,) = [v["schema"]["openAPIV3Schema"] for v in crd["spec"]["versions"] if v["name"] == version]
json.dump(schema, sys.stdout, indent=1, sort_keys=True)
print()
