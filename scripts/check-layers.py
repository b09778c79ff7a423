#!/usr/bin/env python3
"""Checks that the folders of Sources/LocalStorageKit depend downward only (docs/DESIGN.md, "Layers").

A folder may name a type declared in a folder of a lower rank, never one of the same rank in another
folder or of a higher rank. Types are found by their declarations; comments and string literals are
ignored. Exit status 1 lists every upward or sideways edge.
"""
import collections, glob, os, re, sys

RANK = {"Model": 0, "LMDB": 1, "Logging": 1, "Encoding": 2, "SharedTier": 2, "Indexes": 3, "Migration": 3,
        "Records": 4, "Observation": 5, "API": 6, "Maintenance": 7}
base = os.path.join(os.path.dirname(__file__), "..", "Sources", "LocalStorageKit")
files = glob.glob(os.path.join(base, "**", "*.swift"), recursive=True)

def folder(path):
    return os.path.relpath(path, base).split(os.sep)[0]

def code(path):
    text = open(path, encoding="utf-8").read()
    text = re.sub(r'"""(?:.|\n)*?"""', '""', text)
    text = re.sub(r'"(?:\\.|[^"\\\n])*"', '""', text)
    return re.sub(r"//.*", "", text)

declared = {}
pattern = re.compile(r"^(?:(?:public|private|fileprivate|final|nonisolated|@_spi\(\w+\))\s+)*"
                     r"(?:struct|enum|class|protocol|actor|typealias)\s+(\w+)", re.M)
for path in files:
    for match in pattern.finditer(code(path)):
        declared.setdefault(match.group(1), folder(path))

problems = collections.defaultdict(set)
for path in files:
    source, text = folder(path), code(path)
    if source not in RANK:
        problems[(source, "?")].add("folder has no rank in scripts/check-layers.py")
        continue
    for name, target in declared.items():
        if target == source or RANK.get(target, -1) < RANK[source]:
            continue
        if re.search(r"\b" + name + r"\b", text):
            problems[(source, target)].add(f"{os.path.basename(path)} names {name}")

for (source, target), uses in sorted(problems.items()):
    print(f"{source}/ -> {target}/: " + "; ".join(sorted(uses)[:6]))
if problems:
    sys.exit(1)
print(f"layers: {len(files)} files, every dependency points down")
