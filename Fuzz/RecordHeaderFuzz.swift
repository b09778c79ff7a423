// libFuzzer target: the record header parser (Encoding/RecordHeader.swift). Any bytes may sit in
// the records database: parsing must never read out of bounds, and what parses must round-trip.

@_cdecl("LLVMFuzzerTestOneInput")
public func recordHeaderFuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let input = UnsafeRawBufferPointer(start: data, count: size)
    guard let view = try? RecordView(input) else { return 0 }
    _ = (view.version, view.createdAt, view.updatedAt, view.expiresAt, view.signature, view.isExpired(at: 0))
    _ = view.indexValue(named: Array("category".utf8))
    var count = 0
    view.forEachIndexValue { _, _, _ in
        count += 1
        return true
    }
    guard count == view.indexValueCount else { fatalError("walked \(count) of \(view.indexValueCount) values") }
    let header = view.header()
    let payload = Array(view.payload)
    // A header that parses re-serializes to one that parses to the same fields.
    guard let bytes = try? header.serialized(payload: payload) else { return 0 }
    let again = bytes.withUnsafeBytes { buffer in (try? RecordView(buffer)).map { ($0.header(), Array($0.payload)) } }
    guard let again, again.0 == header, again.1 == payload else {
        fatalError("a parsed header does not round-trip")
    }
    return 0
}
