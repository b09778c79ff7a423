#!/usr/bin/env bash
# Writes LocalStorageKit's symbol graphs into DIR (default .build/symbol-graphs): public symbols only,
# without the members the compiler synthesizes, without SPI. Builds the LocalStorageKit target alone (debug,
# in .build like `swift build`, so after `make test` nothing is left to build) and extracts its graphs with
# the toolchain's `swift-symbolgraph-extract`, the tool SwiftPM's `dump-symbol-graph` runs. It does not use
# `dump-symbol-graph` itself: that one extracts every module of the package, test modules included, and
# fails on a fresh clone where only `swift build` (which builds no tests) has run.
# Used by scripts/build-docs.sh (`make docs`) and scripts/api-baseline.sh (`make api-check`, `make api-baseline`).
# Usage: scripts/symbol-graphs.sh [DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
graphs=${1:-.build/symbol-graphs}
scripts/ensure-dependencies.sh lmdb

extract=${SWIFT_SYMBOLGRAPH_EXTRACT:-$(command -v swift-symbolgraph-extract || true)}
if [ -z "$extract" ]; then
    candidate="$(dirname "$(readlink -f "$(command -v swift)")")/swift-symbolgraph-extract"
    [ -x "$candidate" ] && extract=$candidate
fi
if [ -z "$extract" ]; then
    echo "symbol graphs: no swift-symbolgraph-extract found (it ships with the Swift toolchain)" >&2
    exit 1
fi

log=$(mktemp)
scratch=$(mktemp -d)
trap 'rm -rf "$log" "$scratch"' EXIT
if ! swift build --target LocalStorageKit >"$log" 2>&1; then
    cat "$log" >&2
    exit 1
fi
modules="$(swift build --show-bin-path)/Modules"
triple=$(swift -print-target-info | python3 -c 'import json, sys; print(json.load(sys.stdin)["target"]["triple"])')
sdk=()
if [ "$(uname)" = Darwin ]; then sdk=(-sdk "$(xcrun --show-sdk-path)"); fi
if ! "$extract" -module-name LocalStorageKit -target "$triple" "${sdk[@]}" -I "$modules" -I Sources/CLMDB -I Sources/CSodium -I Sources/CZstd \
    -minimum-access-level public -skip-synthesized-members -output-dir "$scratch" >"$log" 2>&1 \
    || [ ! -f "$scratch/LocalStorageKit.symbols.json" ]; then
    cat "$log" >&2
    echo "symbol graphs: swift-symbolgraph-extract wrote no LocalStorageKit graph" >&2
    exit 1
fi
# A stale graph of a removed extension must not survive: start from an empty directory.
rm -rf "$graphs"
mkdir -p "$graphs"
cp "$scratch"/LocalStorageKit.symbols.json "$scratch"/LocalStorageKit@*.symbols.json "$graphs"/
