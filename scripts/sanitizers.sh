#!/usr/bin/env bash
# Runs the test suite under Thread Sanitizer and Address Sanitizer, each in its own build directory
# (.build/sanitize-thread, .build/sanitize-address) so the normal build stays warm.
# Usage: scripts/sanitizers.sh [thread|address ...]     FILTER='LoadTests' scripts/sanitizers.sh thread
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/ensure-dependencies.sh lmdb
sanitizers=("$@")
[ ${#sanitizers[@]} -eq 0 ] && sanitizers=(thread address)
filter=()
[ -n "${FILTER:-}" ] && filter=(--filter "$FILTER")
status=0
for sanitizer in "${sanitizers[@]}"; do
    log=".build/sanitize-$sanitizer.log"
    mkdir -p .build
    echo "== $sanitizer sanitizer: building and testing (log: $log)"
    # Swift's own crash backtracer would confuse the sanitizers' reports. Suppressions: see the file.
    if SWIFT_BACKTRACE=enable=no TSAN_OPTIONS="suppressions=$PWD/scripts/tsan-suppressions.txt" \
        LSAN_OPTIONS="suppressions=$PWD/scripts/lsan-suppressions.txt" \
        swift test --sanitize="$sanitizer" --scratch-path ".build/sanitize-$sanitizer" "${filter[@]}" >"$log" 2>&1
    then
        result="passed"
    else
        result="FAILED"
        status=1
    fi
    reports=$(grep -c -E "WARNING: ThreadSanitizer|ERROR: AddressSanitizer|ERROR: LeakSanitizer" "$log" || true)
    echo "== $sanitizer sanitizer: tests $result; $reports sanitizer reports"
    grep -E "^✘|Test run with" "$log" | tail -5 || true
    [ "$reports" -eq 0 ] || status=1
done
exit $status
