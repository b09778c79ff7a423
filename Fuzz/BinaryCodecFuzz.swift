// libFuzzer target: the binary codec's decoder (Encoding/Binary/). Payloads come from disk: decoding
// any bytes as any Codable shape, or converting them to JSON, must fail cleanly, never crash or hang.
import Foundation

struct FuzzShape: Codable, Equatable {
    struct Inner: Codable, Equatable {
        var name: String
        var values: [Int64]
        var flag: Bool?
    }
    var id: String
    var count: Int
    var ratio: Double
    var tags: [String]
    var inner: Inner?
    var map: [String: Int]
    var date: Date?
    var blob: Data?
    var nested: [[UInt8]]
}

@_cdecl("LLVMFuzzerTestOneInput")
public func binaryCodecFuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let input = UnsafeRawBufferPointer(start: data, count: size)
    _ = try? BinaryDecoder().decode(FuzzShape.self, from: input)
    _ = try? BinaryDecoder().decode([String: [Int]].self, from: input)
    _ = try? BinaryDecoder().decode(String.self, from: input)
    _ = try? BinaryJSON.jsonData(fromBinary: input)
    return 0
}
