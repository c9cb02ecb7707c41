#!/usr/bin/env python3
"""Checks that every `*.schema.json` in a folder is a valid JSON Schema (draft 2020-12) and that
its `$id` names its file. A folder with no schema fails: a check of nothing checks nothing.
Each --json output is validated against its schema by the CLI tests; this proves the schemas
themselves. Usage: check-schemas.py FOLDER   (needs the jsonschema package: .build-peers/venv)
"""
import glob, json, os, sys
import jsonschema

if len(sys.argv) != 2:
    sys.exit("usage: check-schemas.py FOLDER")
paths = sorted(glob.glob(os.path.join(sys.argv[1], "*.schema.json")))
if not paths:
    sys.exit(f"check-schemas: no *.schema.json in {sys.argv[1]}: nothing to check")
bad = 0
for path in paths:
    try:
        schema = json.load(open(path, encoding="utf-8"))
        jsonschema.Draft202012Validator.check_schema(schema)
        if not str(schema.get("$id", "")).endswith("/" + os.path.basename(path)):
            raise ValueError(f"its $id ({schema.get('$id')}) does not name the file")
    except Exception as e:  # a file that is not JSON, or not a schema
        print(f"check-schemas: {path}: {e}", file=sys.stderr)
        bad += 1
print(f"{len(paths) - bad} of {len(paths)} schemas valid in {sys.argv[1]}")
sys.exit(1 if bad else 0)
