#!/usr/bin/env bash
# The public API baseline: api/LocalStorageKit.public-api.txt, every public declaration of LocalStorageKit
# with its declaration and the conformances, from the compiler's symbol graph (scripts/public-api.py).
#
#   scripts/api-baseline.sh write   (`make api-baseline`) regenerates the committed file. Commit it together
#                                   with a line in CHANGELOG.md's Unreleased section saying what changed.
#   scripts/api-baseline.sh check   (`make api-check`, CI) fails
#     1. when the public API of the build differs from the committed baseline (an accidental change, or an
#        intended one whose baseline was not regenerated): it prints the difference; and
#     2. when the baseline differs from the one at the base revision while CHANGELOG.md's Unreleased
#        section does not: an API change needs a changelog line.
#   The base revision is $API_BASE_REF when set (CI for a pull request: API_BASE_REF=origin/main), else the
#   merge base of HEAD with `main` or `origin/main` when one exists; on main itself that is HEAD, so the
#   second check then looks at uncommitted changes only. On a clean clone of main the first check is what
#   guards the API.
#
# The baseline is made on Linux: declarations behind `#if canImport(os)` (OSLogStorageLogger) are not in it,
# and URL.applicationSupportDirectory (supplied only where Foundation lacks it) is.
set -euo pipefail
cd "$(dirname "$0")/.."
mode=${1:-check}
baseline=api/LocalStorageKit.public-api.txt
graphs=.build/api-symbol-graphs
current=.build/api/LocalStorageKit.public-api.txt

scripts/symbol-graphs.sh "$graphs"
mkdir -p "$(dirname "$current")"
python3 scripts/public-api.py "$graphs" >"$current"

case "$mode" in
    write)
        mkdir -p "$(dirname "$baseline")"
        if [ -f "$baseline" ] && cmp -s "$current" "$baseline"; then
            echo "api: $baseline is up to date ($(wc -l <"$baseline") lines)"
            exit 0
        fi
        cp "$current" "$baseline"
        echo "api: wrote $baseline ($(wc -l <"$baseline") lines); add a line to CHANGELOG.md's Unreleased section"
        exit 0 ;;
    check) ;;
    *) echo "usage: scripts/api-baseline.sh write|check" >&2; exit 2 ;;
esac

status=0
if [ ! -f "$baseline" ]; then
    echo "api: no baseline at $baseline: run 'make api-baseline' and commit it" >&2
    exit 1
fi
if ! cmp -s "$baseline" "$current"; then
    echo "api: the public API differs from $baseline (- baseline, + this build):" >&2
    diff -u "$baseline" "$current" | tail -n +3 | grep -E '^[-+]' >&2 || true
    echo "api: if the change is intended, run 'make api-baseline' and add a line to CHANGELOG.md's Unreleased section" >&2
    status=1
fi

# The Unreleased section of a CHANGELOG.md read from standard input.
unreleased() { awk '/^## \[Unreleased\]/ { inside = 1; next } /^## / { inside = 0 } inside'; }

base=${API_BASE_REF:-}
if [ -z "$base" ] && git rev-parse --git-dir >/dev/null 2>&1; then
    for candidate in main origin/main; do
        if git rev-parse --verify --quiet "$candidate^{commit}" >/dev/null; then
            base=$(git merge-base HEAD "$candidate" 2>/dev/null || true)
            [ -n "$base" ] && break
        fi
    done
fi
if [ -n "$base" ]; then
    if git cat-file -e "$base:$baseline" 2>/dev/null; then
        base_api=$(git show "$base:$baseline")
    else
        base_api=""
    fi
    if [ "$base_api" != "$(cat "$baseline")" ]; then
        base_log=$(git show "$base:CHANGELOG.md" 2>/dev/null | unreleased || true)
        if [ "$base_log" = "$(unreleased <CHANGELOG.md)" ]; then
            echo "api: $baseline changed since $(git rev-parse --short "$base") but CHANGELOG.md's Unreleased section did not: say what changed in the API there" >&2
            status=1
        fi
    fi
else
    echo "api: no base revision (set API_BASE_REF); checked the build against the baseline only" >&2
fi
[ "$status" -eq 0 ] && echo "api: the public API matches $baseline ($(wc -l <"$baseline") declarations and conformances)"
exit "$status"
