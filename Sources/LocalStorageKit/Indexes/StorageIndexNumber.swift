import Foundation

/// A number one index can hold, exactly: every conforming type orders in one numeric order.
///
/// Int, Int8…Int64, UInt…UInt64, Double, Float, Date (as seconds since 1970) and Bool (0 and 1)
/// conform. Values above 2^53 keep their exact order; NaN is never indexed (a NaN filter bound is an
/// ``LocalStorageError/invalidQuery(_:)``).
public protocol StorageIndexNumber: Sendable {
    /// The value as the store orders it.
    var storageNumber: StorageNumber { get }
}

/// An exact number as an index stores it. Created by ``StorageIndexNumber`` conformances.
public struct StorageNumber: Sendable, Hashable {
    let value: NumericValue

    init(_ value: NumericValue) { self.value = value }
}

extension Int: StorageIndexNumber {
    /// The value as a number index orders it.
    public var storageNumber: StorageNumber { StorageNumber(.int(Int64(self))) }
}
extension Int8: StorageIndexNumber {
    /// The value as a number index orders it.
    public var storageNumber: StorageNumber { StorageNumber(.int(Int64(self))) }
}
extension Int16: StorageIndexNumber {
    /// The value as a number index orders it.
    public var storageNumber: StorageNumber { StorageNumber(.int(Int64(self))) }
}
extension Int32: StorageIndexNumber {
    /// The value as a number index orders it.
    public var storageNumber: StorageNumber { StorageNumber(.int(Int64(self))) }
}
extension Int64: StorageIndexNumber {
    /// The value as a number index orders it.
    public var storageNumber: StorageNumber { StorageNumber(.int(self)) }
}
extension UInt: StorageIndexNumber {
    /// The value as a number index orders it.
    public var storageNumber: StorageNumber { StorageNumber(.uint(UInt64(self))) }
}
extension UInt8: StorageIndexNumber {
    /// The value as a number index orders it.
    public var storageNumber: StorageNumber { StorageNumber(.uint(UInt64(self))) }
}
extension UInt16: StorageIndexNumber {
    /// The value as a number index orders it.
    public var storageNumber: StorageNumber { StorageNumber(.uint(UInt64(self))) }
}
extension UInt32: StorageIndexNumber {
    /// The value as a number index orders it.
    public var storageNumber: StorageNumber { StorageNumber(.uint(UInt64(self))) }
}
extension UInt64: StorageIndexNumber {
    /// The value as a number index orders it.
    public var storageNumber: StorageNumber { StorageNumber(.uint(self)) }
}
extension Double: StorageIndexNumber {
    /// The value as a number index orders it.
    public var storageNumber: StorageNumber { StorageNumber(.double(self)) }
}
extension Float: StorageIndexNumber {
    /// The value as a number index orders it (widened to `Double`, exactly).
    public var storageNumber: StorageNumber { StorageNumber(.double(Double(self))) }
}
extension Date: StorageIndexNumber {
    /// The value as a number index orders it (seconds since 1970, as a `Double`).
    public var storageNumber: StorageNumber { StorageNumber(.double(timeIntervalSince1970)) }
}
extension Bool: StorageIndexNumber {
    /// The value as a number index orders it (`false` is 0, `true` is 1).
    public var storageNumber: StorageNumber { StorageNumber(.int(self ? 1 : 0)) }
}
