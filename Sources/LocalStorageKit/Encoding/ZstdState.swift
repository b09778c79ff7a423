import CZstd
import Synchronization

/// zstd's state kept between payloads: a dictionary digested once (for decompression, and for compression
/// at the store's level) instead of at every call, and contexts reused instead of made per payload. On the
/// small payloads a cache holds, making these each time cost several times the (de)compression itself.
///
/// zstd allows sharing a digested dictionary between threads (it is read-only once made); a context is used
/// by one thread at a time (taken from the pool and given back).
final class ZstdDigestedDictionary: @unchecked Sendable {
    /// The `ZSTD_DDict`.
    let forDecompression: OpaquePointer
    /// The `ZSTD_CDict` at the level it was made for, made on first use.
    private let compression = Mutex<(level: Int32, dictionary: ZstdCompressionDictionary)?>(nil)
    private let bytes: [UInt8]

    /// Digests `bytes`; nil when zstd cannot.
    init?(_ bytes: [UInt8]) {
        guard let made = bytes.withUnsafeBytes({ ZSTD_createDDict($0.baseAddress, $0.count) }) else { return nil }
        forDecompression = made
        self.bytes = bytes
    }

    deinit { ZSTD_freeDDict(forDecompression) }

    /// The dictionary digested for compression at `level`, or nil when zstd cannot make it.
    func forCompression(level: Int32) -> ZstdCompressionDictionary? {
        compression.withLock { cached in
            if let cached, cached.level == level { return cached.dictionary }
            guard let made = ZstdCompressionDictionary(bytes, level: level) else { return nil }
            cached = (level, made)
            return made
        }
    }
}

/// A `ZSTD_CDict`, freed with the last reference.
final class ZstdCompressionDictionary: @unchecked Sendable {
    let pointer: OpaquePointer

    init?(_ bytes: [UInt8], level: Int32) {
        guard let made = bytes.withUnsafeBytes({ ZSTD_createCDict($0.baseAddress, $0.count, level) }) else {
            return nil
        }
        pointer = made
    }

    deinit { ZSTD_freeCDict(pointer) }
}

/// A few zstd contexts of one kind kept for reuse.
final class ZstdContextPool: Sendable {
    /// One context, freed with the last reference.
    private final class Context: @unchecked Sendable {
        let pointer: OpaquePointer
        let free: @Sendable (OpaquePointer) -> Void

        init(_ pointer: OpaquePointer, free: @escaping @Sendable (OpaquePointer) -> Void) {
            self.pointer = pointer
            self.free = free
        }

        deinit { free(pointer) }
    }

    private let idle = Mutex<[Context]>([])
    private let make: @Sendable () -> OpaquePointer?
    private let free: @Sendable (OpaquePointer) -> Void
    /// How many idle contexts are kept; more are freed when given back.
    private static let kept = 8

    init(make: @escaping @Sendable () -> OpaquePointer?, free: @escaping @Sendable (OpaquePointer) -> Void) {
        self.make = make
        self.free = free
    }

    /// Decompression contexts.
    static let decompression = ZstdContextPool(make: { ZSTD_createDCtx() }, free: { _ = ZSTD_freeDCtx($0) })
    /// Compression contexts.
    static let compression = ZstdContextPool(make: { ZSTD_createCCtx() }, free: { _ = ZSTD_freeCCtx($0) })

    /// Runs `body` with a context of the pool's kind; nil when none can be made.
    func with<R>(_ body: (OpaquePointer) -> R) -> R? {
        let taken = idle.withLock { $0.popLast() }
        guard let context = taken ?? make().map({ Context($0, free: free) }) else { return nil }
        let result = body(context.pointer)
        idle.withLock { idle in if idle.count < Self.kept { idle.append(context) } }
        return result
    }
}
