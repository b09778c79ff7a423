#!/usr/bin/env bash
# Formats the whole tree with swift-format and the configuration in .swift-format, in place, so that
# `make lint` passes. Run it once on main after merging the branches (formatting on a branch would collide
# with parallel work), commit the result on its own, and rerun it whenever `make lint` complains.
#
#   scripts/format-tree.sh            format Sources, Tests, Benchmarks and Package.swift in place
#   scripts/format-tree.sh --check    format a copy and report what would change (exit 1 if anything would)
#
# One pre-pass: swift-format indents a declaration whose `nonisolated(nonsending)` modifier stands on its own
# line as if it were a continuation, so the modifier is first joined to the declaration that follows.
set -euo pipefail
cd "$(dirname "$0")/.."
paths=(Sources Tests Benchmarks Package.swift)

join_modifier() {
    # "    nonisolated(nonsending)\n    public func f()" -> "    nonisolated(nonsending) public func f()"
    local files
    files=$(grep -rlE '^[[:space:]]*nonisolated\(nonsending\)[[:space:]]*$' "$@" --include='*.swift' || true)
    [ -z "$files" ] && return 0
    # shellcheck disable=SC2086
    perl -0pi -e 's/^([ \t]*)nonisolated\(nonsending\)[ \t]*\n[ \t]*/$1nonisolated(nonsending) /mg' $files
}

if [ "${1:-}" = "--check" ]; then
    copy=$(mktemp -d)
    trap 'rm -rf "$copy"' EXIT
    cp -R "${paths[@]}" .swift-format "$copy"/
    (cd "$copy" && join_modifier Sources Tests Benchmarks \
        && swift format format --in-place --parallel -r "${paths[@]}")
    changed=0
    while IFS= read -r file; do
        if ! cmp -s "$file" "$copy/$file"; then
            echo "would reformat: $file"
            changed=1
        fi
    done < <(find Sources Tests Benchmarks -name '*.swift'; echo Package.swift)
    exit "$changed"
fi

join_modifier Sources Tests Benchmarks
swift format format --in-place --parallel -r "${paths[@]}"
echo "format: done; 'make lint' should pass now (commit the formatting on its own)"
