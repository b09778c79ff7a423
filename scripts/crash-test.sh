#!/usr/bin/env bash
# The long reliability run: the SIGKILL crash test with CRASH_ROUNDS rounds per durability (default 25),
# the load test for LOAD_SECONDS (default 10) and the multi-process tests. CI runs the same tests with
# 6/2/2 rounds and 1.5 s as part of `swift test`. Prints the figures the README's Reliability section quotes.
# Usage: scripts/crash-test.sh            CRASH_ROUNDS=100 LOAD_SECONDS=60 scripts/crash-test.sh
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/ensure-dependencies.sh lmdb
export CRASH_ROUNDS="${CRASH_ROUNDS:-25}" LOAD_SECONDS="${LOAD_SECONDS:-10}"
swift build --build-tests
log=.build/crash-test.log
status=0
swift test --skip-build --filter 'CrashSafetyTests|LoadTests|MultiProcessTests' >"$log" 2>&1 || status=$?
grep -E '^\[reliability\]|^✘|Test run with' "$log" || true
[ "$status" -eq 0 ] || echo "FAILED (full output: $log)" >&2
exit "$status"
