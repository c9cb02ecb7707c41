#!/usr/bin/env python3
"""Fails unless every public symbol of the given modules has documentation of its own.

Reads the symbol graphs that `swift package generate-documentation` extracted (public symbols
only) and lists each symbol without a doc comment. A symbol that implements a protocol
requirement the protocol documents (DocC shows the protocol's text), an enum case's payload
and compiler-made members are not counted.

The graphs are found wherever the plugin put them under BUILD-FOLDER
(`<triple>/extracted-symbols/<package folder name>/<Module>/`: the package's name there is the
checkout's folder name, so no path is assumed). A module without graphs, or a run that counts
no public symbol at all, is a failure: a check that passes on nothing checks nothing.
Usage: scripts/docs-coverage.py BUILD-FOLDER MODULE...
"""
import glob, json, os, sys

if len(sys.argv) < 3:
    sys.exit("usage: docs-coverage.py BUILD-FOLDER MODULE...")
build, modules = sys.argv[1], sys.argv[2:]
missing, counted, failed = [], 0, False
for module in modules:
    # The newest extraction of this module (a build folder reused by checkouts of other names
    # may hold older ones).
    folders = sorted(glob.glob(os.path.join(build, "*", "extracted-symbols", "*", module)), key=os.path.getmtime)
    paths = sorted(glob.glob(os.path.join(folders[-1], f"{module}*.symbols.json"))) if folders else []
    if not paths:
        print(f"docs-coverage: no symbol graph of {module} under {build}/*/extracted-symbols/", file=sys.stderr)
        failed = True
        continue
    for path in paths:
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
if counted == 0:
    print("docs-coverage: no public symbol was counted: the check found nothing to check", file=sys.stderr)
sys.exit(1 if missing or failed or counted == 0 else 0)
