#!/usr/bin/env python3
"""Checks that the folders of Sources/LocalStorageKit depend downward only (docs/DESIGN.md, "Layers").

A folder may name a type declared in a folder of a lower rank, never one of a higher rank, nor one of the
same rank in another folder, except inside the engine: the folders of rank 5 (the store core and writer, the
record rules, indexes and the count tree, queries, the cache, observation and loading) are one layer whose
concepts call each other (the writer runs the evictor, which deletes records, which update the count tree
and the change log, which voids load leases), each in a folder of its own. Types are found by their declarations; comments and string literals are
ignored. Exit status 1 lists every upward or sideways edge.
"""
import collections, glob, os, re, sys

RANK = {"Logging": 0, "Concurrency": 1, "Model": 1, "LMDB": 2, "Encoding": 3, "RESP": 3, "Migration": 5,
        "Store": 5, "Records": 5, "Indexes": 5, "Query": 5, "Cache": 5, "Observation": 5, "Loading": 5,
        "SharedTier": 6, "API": 7, "Maintenance": 8}
ENGINE = 5  # the one rank whose folders may name each other's types
base = os.path.join(os.path.dirname(__file__), "..", "Sources", "LocalStorageKit")
files = glob.glob(os.path.join(base, "**", "*.swift"), recursive=True)

def folder(path):
    return os.path.relpath(path, base).split(os.sep)[0]

def code(path):
    text = open(path, encoding="utf-8").read()
    text = re.sub(r'"""(?:.|\n)*?"""', '""', text)
    text = re.sub(r'"(?:\\.|[^"\\\n])*"', '""', text)
    return re.sub(r"//.*", "", text)

# Every type declaration, at any depth, whatever its modifiers and attributes (`@usableFromInline`,
# `@_spi(Testing)`, `@available(...)`); `class func` and `class var` are members, not types. Extensions
# declare nothing themselves. A nested declaration (indented, as swift-format leaves it) is known by its
# qualified name, `Writer.Context`, the way another folder names it; a top-level one by its name.
MODIFIER = (r"(?:@\w+(?:\([^()\n]*\))?|public|private|fileprivate|internal|package|open|final|indirect|"
            r"nonisolated|(?:private|fileprivate|internal|package)\(set\))")
DECLARATION = re.compile(r"^([ \t]*)(?:" + MODIFIER + r"\s+)*(?:(struct|enum|class|protocol|actor|typealias)\s+"
                         r"(?!(?:func|var|let|subscript|init|deinit|static)\b)(\w+)|(extension)\s+([\w.]+))")

def declarations(text):
    """The names of the types `text` declares: top-level ones plain, nested ones qualified."""
    enclosing = []  # (indent, qualified name) of the types and extensions around the current line
    for line in text.split("\n"):
        match = DECLARATION.match(line)
        if not match:
            continue
        indent = len(match.group(1).expandtabs(4))
        while enclosing and enclosing[-1][0] >= indent:
            enclosing.pop()
        outer = enclosing[-1][1] + "." if enclosing else ""
        if match.group(4):  # an extension: names the types nested in it
            enclosing.append((indent, match.group(5)))
            continue
        name = outer + match.group(3)
        yield name
        enclosing.append((indent, name))

declared = collections.defaultdict(set)
for path in files:
    for name in declarations(code(path)):
        declared[name].add(folder(path))
problems = collections.defaultdict(set)
for path in files:
    source, text = folder(path), code(path)
    if source not in RANK:
        problems[(source, "?")].add("folder has no rank in scripts/check-layers.py")
        continue
    for name, targets in declared.items():
        # A name the folder declares itself (a nested `State`, say) is its own.
        if source in targets:
            continue
        above = [
            target for target in targets
            if RANK.get(target, 99) > RANK[source] or (RANK.get(target) == RANK[source] != ENGINE)
        ]
        if not above or len(above) < len(targets):
            continue  # declared below too: taken as the lower one
        if re.search(r"\b" + r"\s*\.\s*".join(name.split(".")) + r"\b", text):
            for target in above:
                problems[(source, target)].add(f"{os.path.basename(path)} names {name}")

for (source, target), uses in sorted(problems.items()):
    print(f"{source}/ -> {target}/: " + "; ".join(sorted(uses)[:6]))
if problems:
    sys.exit(1)
print(f"layers: {len(files)} files, every dependency points down")
