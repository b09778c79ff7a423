#!/usr/bin/env bash
# Fuzzes the decoders that read bytes from disk, with libFuzzer and AddressSanitizer:
#   key-codec      Encoding/OrderedKey.swift + NumericValue.swift (decode, round trip, order)
#   record-header  Encoding/RecordHeader*.swift (RecordView on any bytes, both layouts, round trip)
#   binary-codec   Encoding/Binary/ (BinaryDecoder and BinaryJSON on any bytes)
# Each target runs for FUZZ_SECONDS (default 60). Crashes land in .build/fuzz/<target>/; the script fails
# on the first target that crashes, hangs (-timeout=10 s per input) or leaks.
# Usage: scripts/fuzz.sh [target ...]        FUZZ_SECONDS=600 scripts/fuzz.sh record-header
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${FUZZ_SECONDS:-60}"
targets=("$@")
[ ${#targets[@]} -eq 0 ] && targets=(key-codec record-header binary-codec)
lib=Sources/LocalStorageKit
work=.build/fuzz
mkdir -p "$work"

# The record header and what it reads with (its view, payload envelope, formats, index values, the error type).
header_sources() {
    local name
    for name in RecordHeader RecordHeader+Compact RecordView PayloadEnvelope PayloadFormat StoredIndexValue IndexKind \
        ByteArray+Integers OrderedKey NumericValue; do
        printf '%s ' "$lib/Encoding/$name.swift"
    done
    printf '%s' "$lib/Model/LocalStorageError.swift"
}

sources_for() {
    case "$1" in
        key-codec) echo "$lib/Encoding/OrderedKey.swift $lib/Encoding/NumericValue.swift Fuzz/KeyCodecFuzz.swift" ;;
        record-header) echo "$(header_sources)" "Fuzz/FuzzShim.swift Fuzz/RecordHeaderFuzz.swift" ;;
        binary-codec) echo "$(ls $lib/Encoding/Binary/*.swift | tr '\n' ' ')" \
            "$(header_sources)" "Fuzz/FuzzShim.swift Fuzz/BinaryCodecFuzz.swift" ;;
        *) echo "unknown target: $1" >&2; exit 2 ;;
    esac
}

# A few valid inputs to start from, written here so that the repository holds no binary files.
seed() {
    local corpus="$work/$1/corpus"
    mkdir -p "$corpus"
    case "$1" in
        key-codec)
            printf 'abc\x00\x01' > "$corpus/string"
            printf 'a\x00\xffb\x00\x01' > "$corpus/zero-byte"
            printf '\x13\x04\x33\x80\x00\x00\x00\x00\x00\x00\x00' > "$corpus/one"
            printf '\x11\xfb\xcb\x3f\xff\xff\xff\xff\xff\xff\xff' > "$corpus/minus-three"
            printf '\x00\x00\x00\x00\x00\x00\xf0\x3f\x01\x00\x00\x00\x00\x00\x00\x80' > "$corpus/doubles" ;;
        record-header)
            # magic, JSON, header length 49, version 1, three timestamps, signature, one string index "c" = "ab"
            printf '\xa7\x01\x31\x00\x01\x00\x00\x00' > "$corpus/record"
            printf '\x01\x00\x00\x00\x00\x00\x00\x00%.0s' 1 2 3 4 >> "$corpus/record"
            printf '\x01\x00\x01c\x01\x02\x00ab{"id":"x"}' >> "$corpus/record"
            # compact: magic, JSON, header length 20, updatedAt 1, no expiry, created = updated, version 1,
            # declaration 0, slot 1 string "ab"
            printf '\xa8\x01\x14\x00\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x01\x00\x02\x02ab{"id":"x"}' \
                > "$corpus/compact" ;;
        binary-codec)
            printf '\x00' > "$corpus/zero"
            printf '{"id":"x"}' > "$corpus/json" ;;
    esac
}

for target in "${targets[@]}"; do
    binary="$work/$target/fuzz-$target"
    mkdir -p "$work/$target"
    echo "== $target: compiling"
    # shellcheck disable=SC2046
    swiftc -sanitize=fuzzer,address -parse-as-library -O -module-name FuzzTarget \
        $(sources_for "$target") -o "$binary" 2>&1 | grep -v "ld.gold: warning: Cannot export local symbol" || true
    [ -x "$binary" ] || { echo "$target did not compile" >&2; exit 1; }
    seed "$target"
    echo "== $target: fuzzing for ${seconds}s"
    log="$work/$target/fuzz.log"
    if ! SWIFT_BACKTRACE=enable=no "$binary" "$work/$target/corpus" -max_total_time="$seconds" -timeout=10 \
        -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$work/$target/" >"$log" 2>&1; then
        tail -40 "$log"
        echo "== $target: FAILED (see $log)" >&2
        exit 1
    fi
    runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo "?")
    corpus=$(ls "$work/$target/corpus" | wc -l)
    echo "== $target: no crash, no hang; $runs inputs executed in ${seconds}s, corpus $corpus inputs"
done
