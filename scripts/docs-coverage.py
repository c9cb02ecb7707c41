#!/usr/bin/env python3
"""Fails unless every public symbol of the given modules has documentation of its own.

Reads the symbol graphs that `swift package generate-documentation` extracted (public symbols
only) and lists each symbol without a doc comment. A symbol that implements a protocol
requirement the protocol documents (DocC shows the protocol's text), an enum case's payload
and compiler-made members are not counted.
Usage: scripts/docs-coverage.py SYMBOLGRAPH-FOLDER MODULE...
"""
import glob, json, os, sys

folder, modules = sys.argv[1], sys.argv[2:]
missing, counted = [], 0
for module in modules:
    for path in sorted(glob.glob(os.path.join(folder, module, f"{module}*.symbols.json"))):
        graph = json.load(open(path))
        # Members that implement or override something documented elsewhere.
        inherits = {r["source"] for r in graph.get("relationships", [])
                    if r["kind"] in ("requirementOf", "optionalRequirementOf", "overrides", "defaultImplementationOf")}
        for s in graph["symbols"]:
            if s.get("accessLevel") != "public" or "::SYNTHESIZED::" in s["identifier"]["precise"]:
                continue
            if s["identifier"]["precise"] in inherits:
                continue
            counted += 1
            if not s.get("docComment", {}).get("lines"):
                loc = s.get("location", {})
                where = os.path.relpath(loc["uri"].replace("file://", ""), os.getcwd()) if loc else "?"
                line = loc.get("position", {}).get("line", -1) + 1 if loc else 0
                missing.append(f"{where}:{line}: {'.'.join(s['pathComponents'])}")
for m in sorted(set(missing)):
    print(f"undocumented: {m}")
print(f"{counted - len(set(missing))} of {counted} public symbols documented in {', '.join(modules)}")
sys.exit(1 if missing else 0)
