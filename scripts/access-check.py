#!/usr/bin/env python3
"""Fails when the libraries' access control does not tell the truth.

Reads the symbol graphs of `swift package dump-symbol-graph --minimum-access-level package`
(every symbol down to `package`, with its access level and its parent) and lists:
- a `public` member of a type (or of an extension of a type) that is not public: an app cannot
  see it, so `public` says something false about it;
- a public symbol whose type holds a tuple (a parameter, a result or a property): an app gets
  unnamed structure that cannot be documented or grown, where a struct says what each part is.
- a public type that the Topics of a module's DocC landing page (Sources/<Module>/<Module>.docc/
  <Module>.md, where the module has one) do not list: the landing page is the public surface's
  table.
Only declarations in this package's Sources/ are judged (the graphs also hold members that
dependencies add to our types). A run that finds no public symbol at all fails: a check that
passes on nothing checks nothing.
Usage: scripts/access-check.py SYMBOLGRAPH-FOLDER MODULE...
"""
import glob, json, os, re, sys

if len(sys.argv) < 3:
    sys.exit("usage: access-check.py SYMBOLGRAPH-FOLDER MODULE...")
folder, modules = sys.argv[1], sys.argv[2:]
sources = os.path.join(os.getcwd(), "Sources") + os.sep
symbols, relationships = {}, []
for module in modules:
    paths = glob.glob(os.path.join(folder, f"{module}.symbols.json")) + glob.glob(os.path.join(folder, f"{module}@*.symbols.json"))
    if not paths:
        sys.exit(f"access-check: no symbol graph of {module} in {folder}")
    for path in paths:
        graph = json.load(open(path))
        symbols.update({s["identifier"]["precise"]: s for s in graph["symbols"]})
        relationships += graph.get("relationships", [])


def where(s):
    loc = s.get("location")
    if not loc:
        return None
    path = loc["uri"].replace("file://", "")
    if not path.startswith(sources):
        return None
    return f"{os.path.relpath(path)}:{loc['position']['line'] + 1}"


def text(fragments):
    return "".join(f["spelling"] for f in fragments)


def has_tuple(type_text):
    """A parenthesised group with a comma or a label that is not a closure's parameter list."""
    for m in re.finditer(r"\(([^()]*)\)", type_text):
        inside, after = m.group(1), type_text[m.end():].lstrip()
        if after.startswith(("->", "async", "throws")):
            continue
        if "," in inside or re.match(r"\s*\w+\s*:", inside):
            return True
    return False


problems, public = [], 0
for r in relationships:
    if r["kind"] != "memberOf":
        continue
    member, parent = symbols.get(r["source"]), symbols.get(r["target"])
    if member and parent and member["accessLevel"] == "public" and parent["accessLevel"] not in ("public", "open"):
        if (w := where(member)):
            problems.append(f"{w}: {'.'.join(member['pathComponents'])} is public in a {parent['accessLevel']} type")
for s in symbols.values():
    if s["accessLevel"] not in ("public", "open") or "::SYNTHESIZED::" in s["identifier"]["precise"]:
        continue
    w = where(s)
    if not w:
        continue
    public += 1
    sig = s.get("functionSignature")
    if sig:
        types = [text(p.get("declarationFragments", [])).split(":", 1)[-1] for p in sig.get("parameters", [])]
        types.append(text(sig.get("returns", [])))
    elif s["kind"]["identifier"] in ("swift.property", "swift.type.property", "swift.var"):
        types = [text(s["declarationFragments"]).split(":", 1)[-1]]
    else:
        types = []
    if any(has_tuple(t) for t in types):
        problems.append(f"{w}: {'.'.join(s['pathComponents'])} is public and has a tuple in its type")
for module in modules:
    page = os.path.join("Sources", module, f"{module}.docc", f"{module}.md")
    if not os.path.exists(page):
        continue
    text = open(page).read()
    listed = text[text.find("## Topics"):] if "## Topics" in text else ""
    for s in symbols.values():
        kinds = ("swift.struct", "swift.class", "swift.enum", "swift.protocol", "swift.typealias", "swift.actor")
        if s["accessLevel"] != "public" or len(s["pathComponents"]) != 1 or s["kind"]["identifier"] not in kinds:
            continue
        w = where(s)
        if w and f"Sources/{module}/" in w and f"``{s['pathComponents'][0]}``" not in listed:
            problems.append(f"{w}: {s['pathComponents'][0]} is public and not listed in {page}")
for p in sorted(set(problems)):
    print(p)
print(f"access: {public} public declarations in {', '.join(modules)}, {len(set(problems))} problems")
if public == 0:
    print("access-check: no public declaration was found: the check found nothing to check", file=sys.stderr)
sys.exit(1 if problems or public == 0 else 0)
