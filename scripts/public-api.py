#!/usr/bin/env python3
"""Prints LocalStorageKit's public interface from its symbol graphs, one sorted line per declaration.

Usage: scripts/public-api.py SYMBOL_GRAPH_DIR   (scripts/api-baseline.sh uses it)

Each line is the symbol's path, its kind and its declaration as the compiler prints it
(`LocalStorage.fetch(_:id:) | method | nonisolated(nonsending) func fetch<T>(…) async throws -> T? where …`),
followed by the protocol conformances of each type (`Int | conforms to | StorageIndexNumber`). Doc comments
and source locations are left out, so only a change to the interface changes the list. Symbols that the
compiler synthesizes are left out (they come with the conformances); SPI is not public API.
"""
import glob
import json
import os
import sys

# Conformances every type has or that the compiler infers from Sendable; their listing varies by toolchain.
IMPLIED = {"Copyable", "Escapable", "SendableMetatype", "BitwiseCopyable"}


def main() -> int:
    if len(sys.argv) != 2:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    graph_dir = sys.argv[1]
    files = sorted(glob.glob(os.path.join(graph_dir, "LocalStorageKit.symbols.json"))
                   + glob.glob(os.path.join(graph_dir, "LocalStorageKit@*.symbols.json")))
    if not files:
        print(f"public api: no LocalStorageKit symbol graph in {graph_dir}", file=sys.stderr)
        return 1
    lines = set()
    names = {}
    external = {}
    conformances = []
    for path in files:
        with open(path, encoding="utf-8") as handle:
            graph = json.load(handle)
        for symbol in graph["symbols"]:
            precise = symbol["identifier"]["precise"]
            names[precise] = ".".join(symbol["pathComponents"])
            if symbol.get("accessLevel") not in ("public", "open") or "::SYNTHESIZED::" in precise:
                continue
            if symbol.get("spi"):
                continue
            kind = symbol["kind"]["displayName"].lower()
            declaration = "".join(fragment["spelling"] for fragment in symbol.get("declarationFragments", []))
            declaration = " ".join(declaration.split())
            lines.add(f"{names[precise]} | {kind} | {declaration}")
        for relation in graph.get("relationships", []):
            if relation["kind"] == "conformsTo":
                conformances.append(relation)
            elif relation["kind"] == "memberOf" and relation["target"] not in names and relation.get("targetFallback"):
                # An extended type of another module (`Int`, `URL`): named by its members' relationships.
                external[relation["target"]] = relation["targetFallback"].split(".", 1)[-1]
    for relation in conformances:
        source = names.get(relation["source"])
        if source is None:
            # Another module's type: only the conformances this module adds to it (`Int: StorageIndexNumber`).
            source = external.get(relation["source"])
            if source is None or relation["target"] not in names:
                continue
        target = names.get(relation["target"]) or relation.get("targetFallback") or relation["target"]
        target = target.split(".")[-1] if "." in target and relation["target"] not in names else target
        if target in IMPLIED:
            continue
        constraints = relation.get("swiftConstraints") or []
        where = ""
        if constraints:
            where = " where " + ", ".join(
                f"{c['lhs']} {':' if c['kind'] == 'conformance' else '=='} {c['rhs']}" for c in constraints)
        lines.add(f"{source} | conforms to | {target}{where}")
    for line in sorted(lines):
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
