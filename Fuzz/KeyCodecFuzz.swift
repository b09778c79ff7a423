// libFuzzer target: the order-preserving key encoder and decoder (Encoding/OrderedKey.swift,
// Encoding/NumericValue.swift). Traps (and so reports) on any crash or broken property:
// decoding never crashes; what decodes re-encodes to the same bytes; encodings keep value order.

@_cdecl("LLVMFuzzerTestOneInput")
public func keyCodecFuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let input = UnsafeRawBufferPointer(start: data, count: size)

    // Arbitrary bytes as a string key and as a number key.
    if let parsed = OrderedKey.decodeString(input) {
        guard parsed.length <= size else { fatalError("decodeString consumed more than it was given") }
        // What decodes re-encodes and decodes to the same string (invalid UTF-8 was repaired once).
        let (again, isCut) = OrderedKey.encodeString(parsed.value)
        let back = again.withUnsafeBytes { OrderedKey.decodeString($0) }
        guard parsed.isTruncated || isCut || back?.value == parsed.value else {
            fatalError("string \(Array(parsed.value.utf8)) does not round-trip")
        }
    }
    if size >= OrderedKey.numberLength,
        let number = OrderedKey.decodeNumber(UnsafeRawBufferPointer(rebasing: input.prefix(OrderedKey.numberLength)))
    {
        guard OrderedKey.encodeNumber(number) == Array(input.prefix(OrderedKey.numberLength)) else {
            fatalError("number \(number) does not re-encode to its bytes")
        }
    }

    // Two strings: the encodings compare as the UTF-8 bytes do (when neither is cut).
    let half = size / 2
    let a = String(decoding: input.prefix(half), as: UTF8.self)
    let b = String(decoding: input.dropFirst(half), as: UTF8.self)
    let (keyA, cutA) = OrderedKey.encodeString(a)
    let (keyB, cutB) = OrderedKey.encodeString(b)
    if !cutA && !cutB {
        guard OrderedKey.compare(keyA, keyB) == OrderedKey.compare(Array(a.utf8), Array(b.utf8)) else {
            fatalError("string order differs for \(Array(a.utf8)) and \(Array(b.utf8))")
        }
        guard keyA.withUnsafeBytes({ OrderedKey.decodeString($0)?.value }) == a else {
            fatalError("string \(Array(a.utf8)) does not round-trip")
        }
    }

    // Two numbers from the first 16 bytes, as doubles and as integers: key order is numeric order.
    if size >= 16 {
        let x = input.loadUnaligned(fromByteOffset: 0, as: UInt64.self)
        let y = input.loadUnaligned(fromByteOffset: 8, as: UInt64.self)
        let pairs: [(NumericValue, NumericValue)] = [
            (.double(Double(bitPattern: x)), .double(Double(bitPattern: y))),
            (.int(Int64(bitPattern: x)), .double(Double(bitPattern: y))),
            (.uint(x), .int(Int64(bitPattern: y))),
            (.uint(x), .double(Double(bitPattern: y))),
        ]
        for (first, second) in pairs {
            guard let keyFirst = OrderedKey.encodeNumber(first), let keySecond = OrderedKey.encodeNumber(second) else {
                continue  // NaN
            }
            guard OrderedKey.compare(keyFirst, keySecond) == NumericValue.compare(first, second) else {
                fatalError("number order differs for \(first) and \(second)")
            }
            guard let back = keyFirst.withUnsafeBytes({ OrderedKey.decodeNumber($0) }), back == first else {
                fatalError("number \(first) does not round-trip")
            }
        }
    }
    return 0
}
