import Foundation
// Temporary stand-in until the binary codec lands.
struct BinaryCodecError: Error, CustomStringConvertible { let description: String }
struct BinaryEncoder {
    func encode<T: Encodable>(_ value: T) throws -> [UInt8] { throw BinaryCodecError(description: "unavailable") }
}
struct BinaryDecoder {
    func decode<T: Decodable>(_ type: T.Type, from bytes: UnsafeRawBufferPointer) throws -> T {
        throw BinaryCodecError(description: "unavailable")
    }
}
enum BinaryJSON {
    static func jsonData(fromBinary bytes: UnsafeRawBufferPointer) throws -> Data {
        throw BinaryCodecError(description: "unavailable")
    }
    static func binary(fromJSON data: Data) throws -> [UInt8] { throw BinaryCodecError(description: "unavailable") }
}
