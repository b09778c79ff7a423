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
        above = [target for target in targets if RANK.get(target, 99) >= RANK[source]]
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
