import Foundation

/// The scalar types decoded in place other than the most common ones (`String`, `Int`, `Double`, `Bool`,
/// `Date`, `[String]`, which ``decodeValue(_:at:path:key:)`` asks for first).
extension BinaryDecodingState {
    /// The scalar types ``decodeRareScalar(_:at:path:)`` decodes. Asked before calling it, so that a struct's
    /// decode does not return a `T?`, whose metadata unspecialized code looks up in the runtime at every call.
    static let rareScalarTypes: Set<ObjectIdentifier> = [
        ObjectIdentifier(Float.self), ObjectIdentifier(Int64.self), ObjectIdentifier(Int32.self),
        ObjectIdentifier(Int16.self), ObjectIdentifier(Int8.self), ObjectIdentifier(UInt.self),
        ObjectIdentifier(UInt64.self), ObjectIdentifier(UInt32.self), ObjectIdentifier(UInt16.self),
        ObjectIdentifier(UInt8.self), ObjectIdentifier(Data.self), ObjectIdentifier(URL.self),
        ObjectIdentifier(Decimal.self),
    ]

    /// Decodes the scalar types other than the most common ones (``rareScalarTypes``).
    func decodeRareScalar<T>(_ type: T.Type, at offset: Int, path: PathBuilder) throws -> T {
        if T.self == Float.self {
            return reinterpret(try decodeFloat(at: offset, path: path), as: T.self)
        } else if T.self == Int64.self {
            return reinterpret(try decodeInteger(Int64.self, at: offset, path: path), as: T.self)
        } else if T.self == Int32.self {
            return reinterpret(try decodeInteger(Int32.self, at: offset, path: path), as: T.self)
        } else if T.self == Int16.self {
            return reinterpret(try decodeInteger(Int16.self, at: offset, path: path), as: T.self)
        } else if T.self == Int8.self {
            return reinterpret(try decodeInteger(Int8.self, at: offset, path: path), as: T.self)
        } else if T.self == UInt.self {
            return reinterpret(try decodeInteger(UInt.self, at: offset, path: path), as: T.self)
        } else if T.self == UInt64.self {
            return reinterpret(try decodeInteger(UInt64.self, at: offset, path: path), as: T.self)
        } else if T.self == UInt32.self {
            return reinterpret(try decodeInteger(UInt32.self, at: offset, path: path), as: T.self)
        } else if T.self == UInt16.self {
            return reinterpret(try decodeInteger(UInt16.self, at: offset, path: path), as: T.self)
        } else if T.self == UInt8.self {
            return reinterpret(try decodeInteger(UInt8.self, at: offset, path: path), as: T.self)
        } else if T.self == Data.self {
            return reinterpret(try decodeData(at: offset, path: path), as: T.self)
        } else if T.self == URL.self {
            return reinterpret(try decodeURL(at: offset, path: path), as: T.self)
        } else if T.self == Decimal.self {
            return reinterpret(try decodeDecimal(at: offset, path: path), as: T.self)
        }
        throw BinaryCodecError("\(T.self) is not one of the scalar types decoded in place.")
    }
}
