#!/usr/bin/env python3
"""Fails when a code listing of the DocC articles is not compiled by the tests.

Usage: scripts/check-doc-snippets.py   (run by scripts/build-docs.sh, `make docs`)

Every ```swift block of Sources/LocalStorageKit/LocalStorageKit.docc/*.md must equal, line for line after
removing the common indentation and trailing spaces, a region of
a Swift file of Tests/LocalStorageKitTests/Documentation/ (one per article) between `// snippet: NAME` and
`// snippet-end`; `swift test` compiles (and mostly runs) those regions, so an article cannot show code that
does not build against the current API. A block directly preceded by an HTML comment
`<!-- not compiled: REASON -->` is exempt (a manifest fragment, an API that is not in this build yet).
A region that no article uses fails too, so that the test file does not collect stale copies.
"""
import glob
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CATALOGUE = os.path.join(ROOT, "Sources/LocalStorageKit/LocalStorageKit.docc")
SNIPPETS = os.path.join(ROOT, "Tests/LocalStorageKitTests/Documentation")
EXEMPT = re.compile(r"^<!--\s*not compiled:.*-->$")


def normalize(lines):
    lines = [line.rstrip() for line in lines]
    while lines and not lines[0]:
        lines.pop(0)
    while lines and not lines[-1]:
        lines.pop()
    indents = [len(line) - len(line.lstrip(" ")) for line in lines if line]
    cut = min(indents) if indents else 0
    return "\n".join(line[cut:] for line in lines)


def regions(path):
    found = {}
    name, body = None, []
    with open(path, encoding="utf-8") as handle:
        for number, line in enumerate(handle, 1):
            stripped = line.strip()
            if stripped.startswith("// snippet:"):
                if name:
                    raise SystemExit(f"{path}:{number}: snippet {name!r} is not closed")
                name, body = stripped[len("// snippet:"):].strip(), []
            elif stripped == "// snippet-end":
                if not name:
                    raise SystemExit(f"{path}:{number}: snippet-end without a snippet")
                if name in found:
                    raise SystemExit(f"{path}:{number}: snippet {name!r} appears twice")
                found[name] = normalize(body)
                name = None
            elif name:
                body.append(line.rstrip("\n"))
    if name:
        raise SystemExit(f"{path}: snippet {name!r} is not closed")
    return found


def blocks(path):
    with open(path, encoding="utf-8") as handle:
        lines = handle.read().split("\n")
    index = 0
    while index < len(lines):
        if lines[index].strip() == "```swift":
            start = index
            previous = next((lines[i].strip() for i in range(index - 1, -1, -1) if lines[i].strip()), "")
            body = []
            index += 1
            while index < len(lines) and lines[index].strip() != "```":
                body.append(lines[index])
                index += 1
            yield start + 1, bool(EXEMPT.match(previous)), normalize(body)
        index += 1


def main() -> int:
    known = {}
    for path in sorted(glob.glob(os.path.join(SNIPPETS, "*.swift"))):
        for name, body in regions(path).items():
            if name in known:
                raise SystemExit(f"{path}: snippet {name!r} appears in two files")
            known[name] = body
    used = set()
    problems = []
    checked = exempt = 0
    for article in sorted(glob.glob(os.path.join(CATALOGUE, "*.md"))):
        for line, is_exempt, code in blocks(article):
            if is_exempt:
                exempt += 1
                continue
            checked += 1
            names = [name for name, body in known.items() if body == code]
            if names:
                used.update(names)
            else:
                first = code.split("\n", 1)[0]
                problems.append(f"{os.path.relpath(article, ROOT)}:{line}: a swift block that "
                                f"the snippet files of Tests/LocalStorageKitTests/Documentation do not compile (it begins {first!r})")
    for name in sorted(set(known) - used):
        problems.append(f"Tests/LocalStorageKitTests/Documentation: snippet {name!r} is used by no article")
    if problems:
        print("doc snippets:", file=sys.stderr)
        for problem in problems:
            print(f"  {problem}", file=sys.stderr)
        print("  (copy the article's block into a `// snippet:` region, or mark it "
              "`<!-- not compiled: why -->`)", file=sys.stderr)
        return 1
    print(f"doc snippets: {checked} swift blocks compiled by the snippet tests, {exempt} marked not compiled")
    return 0


if __name__ == "__main__":
    sys.exit(main())
