#!/usr/bin/env python3
"""Fails when a public symbol declared in Sources/LocalStorageKit has no `///` documentation comment.

Usage: scripts/check-doc-coverage.py SYMBOL_GRAPH_DIR   (run by scripts/build-docs.sh, `make docs`)

Reads the compiler's symbol graphs (LocalStorageKit.symbols.json and the LocalStorageKit@Module files of
extensions to other modules' types). A symbol counts when it is public or open and has a source location
inside Sources/LocalStorageKit: members the compiler synthesizes (`init(from:)`, `hashValue`, a raw-value
initializer) have none and are documented by their protocols.
"""
import glob
import json
import os
import sys


def main() -> int:
    if len(sys.argv) != 2:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    graph_dir = sys.argv[1]
    files = sorted(glob.glob(os.path.join(graph_dir, "LocalStorageKit.symbols.json"))
                   + glob.glob(os.path.join(graph_dir, "LocalStorageKit@*.symbols.json")))
    if not files:
        print(f"doc coverage: no LocalStorageKit symbol graph in {graph_dir}", file=sys.stderr)
        return 1
    sources = "/Sources/LocalStorageKit/"
    checked = 0
    missing = []
    for path in files:
        with open(path, encoding="utf-8") as handle:
            graph = json.load(handle)
        for symbol in graph["symbols"]:
            if symbol.get("accessLevel") not in ("public", "open"):
                continue
            location = symbol.get("location")
            if not location or sources not in location.get("uri", ""):
                continue
            checked += 1
            lines = (symbol.get("docComment") or {}).get("lines") or []
            if not any(line.get("text", "").strip() for line in lines):
                uri = location["uri"]
                where = uri[uri.index(sources) + 1:]
                line = location.get("position", {}).get("line", 0) + 1
                name = ".".join(symbol["pathComponents"])
                missing.append(f"{where}:{line}: {symbol['kind']['displayName'].lower()} {name}")
    if missing:
        print(f"doc coverage: {len(missing)} of {checked} public symbols have no /// comment:", file=sys.stderr)
        for entry in sorted(missing):
            print(f"  {entry}", file=sys.stderr)
        return 1
    print(f"doc coverage: all {checked} public symbols are documented")
    return 0


if __name__ == "__main__":
    sys.exit(main())
