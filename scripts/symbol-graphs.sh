#!/usr/bin/env bash
# Writes LocalStorageKit's symbol graphs into DIR (default .build/symbol-graphs): public symbols only,
# without the members the compiler synthesizes, without SPI. Uses SwiftPM's `dump-symbol-graph`, which
# builds the package in debug (after `make test` nothing is left to build) and extracts the graphs from
# the built modules. Used by scripts/build-docs.sh (`make docs`) and scripts/api-baseline.sh
# (`make api-check`, `make api-baseline`).
# Usage: scripts/symbol-graphs.sh [DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
graphs=${1:-.build/symbol-graphs}
# `swift build` builds the benchmark too, which needs SQLite's headers.
scripts/ensure-dependencies.sh lmdb sqlite
log=$(mktemp)
trap 'rm -f "$log"' EXIT
if ! swift package dump-symbol-graph --skip-synthesized-members --minimum-access-level public >"$log" 2>&1; then
    cat "$log" >&2
    exit 1
fi
dumped=$(sed -n 's/^Files written to //p' "$log" | tail -1)
if [ -z "$dumped" ] || [ ! -f "$dumped/LocalStorageKit.symbols.json" ]; then
    cat "$log" >&2
    echo "symbol graphs: dump-symbol-graph wrote no LocalStorageKit graph" >&2
    exit 1
fi
# A stale graph of a removed extension must not survive: start from an empty directory.
rm -rf "$graphs"
mkdir -p "$graphs"
cp "$dumped"/LocalStorageKit.symbols.json "$dumped"/LocalStorageKit@*.symbols.json "$graphs"/
