#!/usr/bin/env bash
# `make docs`: the DocC site of LocalStorageKit, built with the toolchain's own `docc` (no plugin package).
#
#  1. builds the LocalStorageKit target alone and extracts its symbol graphs (scripts/symbol-graphs.sh:
#     public symbols, no synthesized members; works on a fresh clone, nothing else needs to be built first);
#  2. checks that every public symbol declared in Sources/ has a `///` comment (scripts/check-doc-coverage.py);
#  3. checks that every ```swift block of the articles is compiled by the snippet tests (Tests/LocalStorageKitTests/Documentation)
#     (scripts/check-doc-snippets.py);
#  4. runs `docc convert --warnings-as-errors` on Sources/LocalStorageKit/LocalStorageKit.docc into a static
#     site in .build/docs (an unresolved symbol link or any other warning fails the build).
#
# Serve it with `python3 -m http.server --bind 127.0.0.1 --directory .build/docs 8000` and open
# http://127.0.0.1:8000/documentation/localstoragekit/ (static DocC pages need an HTTP server).
# Environment: DOCS_OUTPUT (default .build/docs), DOCS_HOSTING_BASE_PATH (e.g. /LocalStorageKit for a
# GitHub Pages project site), SYMBOL_GRAPH_DIR (default .build/symbol-graphs).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/ensure-dependencies.sh lmdb

docc=${DOCC:-$(command -v docc || true)}
if [ -z "$docc" ] && command -v swift >/dev/null 2>&1; then
    candidate="$(dirname "$(readlink -f "$(command -v swift)")")/docc"
    [ -x "$candidate" ] && docc=$candidate
fi
if [ -z "$docc" ]; then
    echo "docs: no docc found (it ships with the Swift toolchain; or set DOCC=/path/to/docc)" >&2
    exit 1
fi

graphs=${SYMBOL_GRAPH_DIR:-.build/symbol-graphs}
output=${DOCS_OUTPUT:-.build/docs}

scripts/symbol-graphs.sh "$graphs"

python3 scripts/check-doc-coverage.py "$graphs"
python3 scripts/check-doc-snippets.py

rm -rf "$output"
hosting=()
[ -n "${DOCS_HOSTING_BASE_PATH:-}" ] && hosting=(--hosting-base-path "$DOCS_HOSTING_BASE_PATH")
"$docc" convert Sources/LocalStorageKit/LocalStorageKit.docc \
    --additional-symbol-graph-dir "$graphs" \
    --fallback-display-name LocalStorageKit \
    --fallback-bundle-identifier com.localstoragekit.LocalStorageKit \
    --fallback-default-module-kind Framework \
    --default-code-listing-language swift \
    --output-path "$output" \
    --transform-for-static-hosting "${hosting[@]}" \
    --warnings-as-errors
echo "docs: the site is in $output (landing page: documentation/localstoragekit/index.html)"
