// libFuzzer target: the record header parser (Encoding/RecordHeader.swift, RecordHeader+Compact.swift,
// RecordView.swift), both layouts. Any bytes may sit in the records database: parsing must never read out of bounds
// or trap, and what parses must round-trip.

@_cdecl("LLVMFuzzerTestOneInput")
public func recordHeaderFuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let input = UnsafeRawBufferPointer(start: data, count: size)
    _ = try? RecordView(sharedTierRecord: input)
    guard let view = try? RecordView(input) else { return 0 }
    let header = rebuilt(view)
    let payload = Array(view.payload)
    // A header that parses re-serializes to one that parses to the same fields.
    guard let bytes = try? header.serialized(payload: payload) else { return 0 }
    let again = bytes.withUnsafeBytes { buffer in (try? RecordView(buffer)).map { (rebuilt($0), Array($0.payload)) } }
    guard let again, again.0 == header, again.0.declarationNumber == header.declarationNumber,
        again.0.indexValues.map(\.slot) == header.indexValues.map(\.slot), again.1 == payload
    else {
        fatalError("a parsed header does not round-trip")
    }
    return 0
}

/// The header `view` holds, its slot numbers kept (with made-up names) and names read as UTF-8.
private func rebuilt(_ view: RecordView) -> RecordHeader {
    _ = view.isExpired(at: 0)
    var values: [StoredIndexValue] = []
    view.forEachIndexValue { tag, kind, value in
        switch tag {
        case .name(let name):
            values.append(
                StoredIndexValue(name: String(decoding: name, as: UTF8.self), kind: kind, bytes: Array(value)))
        case .slot(let slot):
            values.append(StoredIndexValue(name: "#\(slot)", kind: kind, bytes: Array(value), slot: slot))
        }
        return true
    }
    var header = RecordHeader(
        format: view.format, version: view.version, createdAt: view.createdAt, updatedAt: view.updatedAt,
        expiresAt: view.expiresAt, signature: 0, indexValues: values, envelope: view.envelope, layout: view.layout)
    switch view.declaration {
    case .signature(let signature): header.signature = signature
    case .number(let number): header.declarationNumber = number
    }
    return header
}
