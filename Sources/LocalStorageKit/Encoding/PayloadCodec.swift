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

    /// The payload as JSON for a migration step (as `JSONEncoder` would have written it), except that a binary
    /// payload's NaN and ±Infinity become the strings `"NaN"`, `"Infinity"` and `"-Infinity"` (JSON numbers
    /// cannot hold them); `replacedNonFinite` says whether any did, so that only such a record's migrated JSON
    /// reads those strings back as numbers (``migrationDecoder(readingNonFinite:)``).
    static func migrationJSON(
        from bytes: UnsafeRawBufferPointer, format: PayloadFormat
    ) throws -> (json: Data, replacedNonFinite: Bool) {
        switch format {
        case .json: return (Data(bytes), false)
        case .binary: return try BinaryJSON.jsonData(fromBinaryKeepingNonFinite: bytes)
        }
    }

    /// The decoder of a migrated record's JSON: `JSONDecoder`'s defaults and, for a record whose non-finite
    /// numbers became strings (`readingNonFinite`), those strings read back into `Double` and `Float` fields.
    /// Other records keep the defaults: a string `"NaN"` in them is text.
    static func migrationDecoder(readingNonFinite: Bool) -> JSONDecoder {
        let decoder = JSONDecoder()
        if readingNonFinite {
            decoder.nonConformingFloatDecodingStrategy = .convertFromString(
                positiveInfinity: "Infinity", negativeInfinity: "-Infinity", nan: "NaN")
        }
        return decoder
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
