import Foundation

/// The one seam between stored payload bytes and Codable values, whatever the format.
enum PayloadCodec {
    /// Encodes `value` in `format`.
    static func encode<T: Encodable>(_ value: T, as format: PayloadFormat) throws(LocalStorageError) -> [UInt8] {
        do {
            switch format {
            case .json:
                return Array(try JSONEncoder().encode(value))
            case .binary:
                // A value that writes into a container after a later sibling fails here (the encoder writes as it
                // goes). It is not handed to JSONEncoder instead: this encoder stops at the first such write and
                // cannot know what the rest of `encode(to:)` does, and some Encoder misuse traps in JSONEncoder.
                return try BinaryEncoder().encode(value)
            }
        } catch {
            throw .encodingFailed(reason: "\(T.self): \(error)")
        }
    }

    /// Decodes a `T` from payload bytes in `format`, reading them in place.
    static func decode<T: Decodable>(
        _ type: T.Type, from bytes: UnsafeRawBufferPointer,
        format: PayloadFormat
    ) throws -> T {
        switch format {
        case .json:
            guard let base = bytes.baseAddress, bytes.count > 0 else {
                return try JSONDecoder().decode(T.self, from: Data())
            }
            let data = Data(
                bytesNoCopy: UnsafeMutableRawPointer(mutating: base), count: bytes.count,
                deallocator: .none)
            return try JSONDecoder().decode(T.self, from: data)
        case .binary:
            return try BinaryDecoder().decode(T.self, from: bytes)
        }
    }

    /// The payload as JSON bytes (as `JSONEncoder` would have written it), for migrations and the CLI.
    static func json(from bytes: UnsafeRawBufferPointer, format: PayloadFormat) throws -> Data {
        switch format {
        case .json: return Data(bytes)
        case .binary: return try BinaryJSON.jsonData(fromBinary: bytes)
        }
    }

    /// JSON bytes re-encoded in `format`.
    static func payload(fromJSON json: Data, as format: PayloadFormat) throws -> [UInt8] {
        switch format {
        case .json: return Array(json)
        case .binary: return try BinaryJSON.binary(fromJSON: json)
        }
    }
}

extension StorageCodec {
    /// The payload format this codec writes.
    var format: PayloadFormat {
        switch self {
        case .json: .json
        case .binary: .binary
        }
    }
}
