import Foundation

/// The state one ``BinaryEncoder/encode(_:)`` call shares between its encoders and containers.
///
/// Values are appended to one buffer as they are encoded. Open arrays and maps form a stack of
/// frames; writing into a container closes (finishes) every container opened after it, which is
/// exactly the order in which `encode(to:)` implementations use them. A container used again after
/// it was closed (interleaved writes into sibling containers) makes the encode call throw.
final class BinaryEncodingState {
    /// An open array or map.
    struct Frame {
        /// The offset of the container's tag byte.
        let header: Int
        /// The number of elements or entries written so far.
        var count: Int
        /// A number unique within this encode call, so that stale references are detected.
        let id: Int
        /// Where a value handed out with `superEncoder()` starts, or -1; written as `{}` if left empty.
        var pendingValueStart: Int
    }

    /// The mutable part of the state, kept in raw memory behind a `let` pointer.
    ///
    /// Stored properties of a class are checked for exclusive access at run time on every write,
    /// which cost more than the writes themselves; memory reached through a pointer is not checked.
    /// Only this state, used by one encode call on one thread, ever touches it.
    private struct Storage: ~Copyable {
        /// The bytes written so far.
        var writer = BinaryWriter(capacity: 256)
        /// The open containers, outermost first.
        var frames: [Frame] = []
        /// The last frame id handed out.
        var lastFrameID = 0
        /// The first misuse of the Encoder API noticed where it could not be thrown right away.
        var deferredError: BinaryCodecError?
    }

    /// The mutable state.
    private let storage: UnsafeMutablePointer<Storage>

    /// Creates the state, with the payload's format-version byte already written.
    init() {
        storage = UnsafeMutablePointer<Storage>.allocate(capacity: 1)
        storage.initialize(to: Storage())
        storage.pointee.frames.reserveCapacity(8)
        storage.pointee.writer.append(BinaryFormat.version)
    }

    /// Frees the mutable state.
    deinit {
        storage.deinitialize(count: 1)
        storage.deallocate()
    }

    /// The bytes written so far.
    var writer: BinaryWriter {
        _read { yield storage.pointee.writer }
        _modify { yield &storage.pointee.writer }
    }

    /// The open containers, outermost first.
    private var frames: [Frame] {
        _read { yield storage.pointee.frames }
        _modify { yield &storage.pointee.frames }
    }

    /// The last frame id handed out.
    private var lastFrameID: Int {
        get { storage.pointee.lastFrameID }
        set { storage.pointee.lastFrameID = newValue }
    }

    /// The first misuse of the Encoder API noticed where it could not be thrown right away.
    private(set) var deferredError: BinaryCodecError? {
        get { storage.pointee.deferredError }
        set { storage.pointee.deferredError = newValue }
    }

    /// The number of open containers.
    var openFrameCount: Int { frames.count }

    // MARK: - Frames

    /// Starts an array or map at the end of the buffer and returns a reference to it.
    func openFrame(tag: UInt8) -> BinaryFrameReference {
        lastFrameID += 1
        frames.append(Frame(header: writer.beginContainer(tag), count: 0, id: lastFrameID, pendingValueStart: -1))
        return BinaryFrameReference(index: frames.count - 1, id: lastFrameID)
    }

    /// Finishes every container above `depth`, innermost first.
    func closeFrames(downTo depth: Int) {
        while frames.count > depth, let frame = frames.popLast() {
            if frame.pendingValueStart == writer.count {
                writer.writeEmptyMap()
            }
            writer.endContainer(header: frame.header, count: frame.count)
        }
    }

    /// Makes `reference` the innermost open container and counts one more element in it.
    ///
    /// - Returns: `false` if the container was already finished (it was used out of order).
    func beginElement(in reference: BinaryFrameReference) -> Bool {
        let index = reference.index
        guard index >= 0, index < frames.count, frames[index].id == reference.id else {
            return false
        }
        if frames.count > index + 1 {
            closeFrames(downTo: index + 1)
        }
        if frames[index].pendingValueStart == writer.count {
            writer.writeEmptyMap()
        }
        frames[index].pendingValueStart = -1
        frames[index].count += 1
        return true
    }

    /// Notes that the value about to be written in `reference` comes from a handed-out encoder.
    func markPendingValue(in reference: BinaryFrameReference) {
        if reference.index >= 0, reference.index < frames.count, frames[reference.index].id == reference.id {
            frames[reference.index].pendingValueStart = writer.count
        }
    }

    /// Returns the number of elements written into `reference`, or `nil` if it is no longer open.
    func elementCount(of reference: BinaryFrameReference) -> Int? {
        guard reference.index >= 0, reference.index < frames.count, frames[reference.index].id == reference.id else {
            return nil
        }
        return frames[reference.index].count
    }

    /// Returns the container for an encoder whose value starts at `valueStart` with `depth` frames open.
    ///
    /// Asking the same encoder twice returns the same container, as `JSONEncoder` does (a subclass
    /// and its superclass both writing into one keyed container).
    func containerFrame(tag: UInt8, valueStart: Int, depth: Int) -> BinaryFrameReference {
        // An encoder handed out by a container used out of order has depth -1 (it never opens a frame).
        if depth >= 0, depth < frames.count, frames[depth].header == valueStart {
            closeFrames(downTo: depth + 1)
            if writer.byte(at: valueStart) == tag {
                return BinaryFrameReference(index: depth, id: frames[depth].id)
            }
            recordMisuse("Requested a keyed and an unkeyed container from the same encoder.")
            return .invalid
        }
        guard depth == frames.count, writer.count == valueStart else {
            recordMisuse("An encoder or container was used after a later sibling value was written.")
            return .invalid
        }
        return openFrame(tag: tag)
    }

    /// Returns whether a single value may be written for an encoder at `valueStart` and `depth`.
    func canWriteSingleValue(valueStart: Int, depth: Int) -> Bool {
        depth == frames.count && writer.count == valueStart
    }

    /// Records a misuse of the Encoder API, to be thrown when the encode call ends.
    func recordMisuse(_ message: String) {
        if deferredError == nil {
            deferredError = BinaryCodecError(message)
        }
    }

    // MARK: - Values

    /// Encodes `value`, the value of `key` in the container at `path`, at the end of the buffer.
    ///
    /// Foundation types that `JSONEncoder` treats specially (`Date`, `Data`, `URL`, `Decimal`) get
    /// their own tags; an `Encodable` that writes nothing becomes an empty map, as in JSON.
    ///
    /// - Returns: `true` if `value` wrote nothing and the empty map was written in its place.
    @discardableResult
    func encodeValue<T: Encodable>(_ value: T, path: BinaryCodingPath?, key: (any CodingKey)?) throws -> Bool {
        if T.self == String.self {
            writer.writeString(reinterpret(value, as: String.self))
        } else if T.self == Int.self {
            writer.writeInt(Int64(reinterpret(value, as: Int.self)))
        } else if T.self == Double.self {
            writer.writeDouble(reinterpret(value, as: Double.self))
        } else if T.self == Bool.self {
            writer.writeBool(reinterpret(value, as: Bool.self))
        } else if T.self == Date.self {
            writer.writeDate(reinterpret(value, as: Date.self))
        } else if T.self == [String].self {
            encodeStringArray(reinterpret(value, as: [String].self))
        } else if !encodeRareScalar(value) {
            let start = writer.count
            let depth = frames.count
            try value.encode(
                to: BinaryEncoderImpl(
                    state: self,
                    path: BinaryCodingPath.appending(key, to: path),
                    valueStart: start,
                    depth: depth
                ))
            closeFrames(downTo: depth)
            if writer.count == start {
                writer.writeEmptyMap()
                return true
            }
        }
        return false
    }

    /// Encodes an array of strings without a container: what `[String].encode(to:)` does, faster.
    private func encodeStringArray(_ strings: [String]) {
        let header = writer.beginContainer(BinaryFormat.Tag.array)
        for string in strings {
            writer.writeString(string)
        }
        writer.endContainer(header: header, count: strings.count)
    }

    /// Encodes the scalar types other than the most common ones; returns `false` if `T` is not one.
    private func encodeRareScalar<T>(_ value: T) -> Bool {
        if T.self == Float.self {
            writer.writeFloat(reinterpret(value, as: Float.self))
        } else if T.self == Int64.self {
            writer.writeInt(reinterpret(value, as: Int64.self))
        } else if T.self == Int32.self {
            writer.writeInt(Int64(reinterpret(value, as: Int32.self)))
        } else if T.self == Int16.self {
            writer.writeInt(Int64(reinterpret(value, as: Int16.self)))
        } else if T.self == Int8.self {
            writer.writeInt(Int64(reinterpret(value, as: Int8.self)))
        } else if T.self == UInt.self {
            writer.writeUInt(UInt64(reinterpret(value, as: UInt.self)))
        } else if T.self == UInt64.self {
            writer.writeUInt(reinterpret(value, as: UInt64.self))
        } else if T.self == UInt32.self {
            writer.writeUInt(UInt64(reinterpret(value, as: UInt32.self)))
        } else if T.self == UInt16.self {
            writer.writeUInt(UInt64(reinterpret(value, as: UInt16.self)))
        } else if T.self == UInt8.self {
            writer.writeUInt(UInt64(reinterpret(value, as: UInt8.self)))
        } else if T.self == Data.self {
            writer.writeBinary(reinterpret(value, as: Data.self))
        } else if T.self == URL.self {
            writer.writeString(reinterpret(value, as: URL.self).absoluteString)
        } else if T.self == Decimal.self {
            writer.writeDecimalText(reinterpret(value, as: Decimal.self).description)
        } else {
            return false
        }
        return true
    }

    /// Returns the error for writing into a container that was already finished.
    func staleContainerError<Value>(_ value: Value, path: BinaryCodingPath?) -> EncodingError {
        EncodingError.invalidValue(
            value,
            EncodingError.Context(
                codingPath: BinaryCodingPath.keys(path),
                debugDescription: "A container was written to after a later sibling value was encoded "
                    + "(interleaved container writes are not supported by the binary codec)."
            ))
    }
}

/// Identifies one open container of a ``BinaryEncodingState`` (its stack index and unique id).
struct BinaryFrameReference {
    /// The container's index in the stack of open containers.
    let index: Int
    /// The container's unique id.
    let id: Int

    /// A reference that never matches an open container; writes through it throw.
    static let invalid = BinaryFrameReference(index: -1, id: -1)
}
