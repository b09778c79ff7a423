#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Pages of an LMDB data file read with `pread(2)`, never through the memory map: a damaged page can then
/// give wrong bytes, but never a crash. The layout constants are LMDB 0.9's on a 64-bit machine.
struct DataFilePages {
    /// The page header: page number (8 bytes), pad (2), flags (2), lower and upper bounds (2 + 2) or, on an
    /// overflow page, the number of pages (4).
    static let headerSize = 16
    /// A node: data size or child page (2 + 2), flags (2), key size (2), then the key and the data.
    static let nodeSize = 8
    /// `P_INVALID`: the root of an empty database.
    static let invalidPage = UInt64.max
    static let magic: UInt32 = 0xBEEF_C0DE
    static let dataVersion: UInt32 = 1

    /// Page flags.
    static let branch: UInt16 = 0x01
    static let leaf: UInt16 = 0x02
    static let overflow: UInt16 = 0x04
    static let meta: UInt16 = 0x08
    static let leaf2: UInt16 = 0x20
    static let subpage: UInt16 = 0x40
    /// Node flags.
    static let bigData: UInt16 = 0x01
    static let subData: UInt16 = 0x02
    static let dupData: UInt16 = 0x04

    /// The data file's descriptor (not owned).
    let descriptor: Int32
    /// The file's length in bytes.
    let fileLength: Int
    /// The page size the meta page states (4096 until a meta page is read).
    var pageSize = 4096

    /// Pages of the open file `descriptor`.
    init(descriptor: Int32) {
        self.descriptor = descriptor
        var info = stat()
        fileLength = fstat(descriptor, &info) == 0 ? Int(info.st_size) : 0
    }

    /// `count` bytes at `offset`, or nil when the file does not hold them all.
    func bytes(at offset: Int, count: Int) -> [UInt8]? {
        guard offset >= 0, count >= 0, offset <= fileLength, count <= fileLength - offset else { return nil }
        var buffer = [UInt8](repeating: 0, count: count)
        var done = 0
        while done < count {
            let read = buffer.withUnsafeMutableBytes { raw -> Int in
                guard let base = raw.baseAddress else { return -1 }
                return pread(descriptor, base + done, count - done, off_t(offset + done))
            }
            guard read > 0 else { return nil }
            done += read
        }
        return buffer
    }

    /// Page `number`, or nil when the file does not hold it.
    func page(_ number: UInt64) -> [UInt8]? {
        guard number < UInt64(Int.max) / UInt64(pageSize) else { return nil }
        return bytes(at: Int(number) * pageSize, count: pageSize)
    }

    /// The two meta pages as far as they can be read (page size from the first that states one).
    mutating func metaPages() -> [MetaPage] {
        guard let first = bytes(at: 0, count: 152) else { return [] }
        let firstMeta = MetaPage(first, number: 0)
        if let firstMeta, Environment.pageSizes.contains(firstMeta.pageSize) {
            pageSize = firstMeta.pageSize
        }
        let second = bytes(at: pageSize, count: 152).flatMap { MetaPage($0, number: 1) }
        return [firstMeta, second].compactMap { $0 }
    }
}

/// A little-endian integer at `offset` of `bytes` (0 past the end).
func loadInteger<T: FixedWidthInteger>(_ bytes: [UInt8], _ offset: Int, as type: T.Type) -> T {
    guard offset >= 0, offset + MemoryLayout<T>.size <= bytes.count else { return 0 }
    // One unaligned load, not a loop of shifts: a walk calls this several times a node, and the loop's generic
    // arithmetic was most of `verify`'s time in a debug build.
    return bytes.withUnsafeBytes { T(littleEndian: $0.loadUnaligned(fromByteOffset: offset, as: T.self)) }
}

/// LMDB's description of one database (`MDB_db`, 48 bytes).
struct DatabaseRecord: Equatable {
    static let size = 48
    var pad: UInt32
    var flags: UInt16
    var depth: UInt16
    var branchPages: UInt64
    var leafPages: UInt64
    var overflowPages: UInt64
    var entries: UInt64
    var root: UInt64

    init(_ bytes: [UInt8], at offset: Int) {
        pad = loadInteger(bytes, offset, as: UInt32.self)
        flags = loadInteger(bytes, offset + 4, as: UInt16.self)
        depth = loadInteger(bytes, offset + 6, as: UInt16.self)
        branchPages = loadInteger(bytes, offset + 8, as: UInt64.self)
        leafPages = loadInteger(bytes, offset + 16, as: UInt64.self)
        overflowPages = loadInteger(bytes, offset + 24, as: UInt64.self)
        entries = loadInteger(bytes, offset + 32, as: UInt64.self)
        root = loadInteger(bytes, offset + 40, as: UInt64.self)
    }
}

/// One of the two meta pages: which commit it describes and where its databases start.
struct MetaPage {
    /// 0 or 1.
    let number: Int
    let pageSize: Int
    let freePages: DatabaseRecord
    let main: DatabaseRecord
    let lastPage: UInt64
    let transactionID: UInt64
    /// The map size the commit that wrote this page had (`mm_mapsize`).
    let mapSize: Int

    /// The meta page in `bytes` (its first 152 bytes), or nil when it has no meta flag, magic or version.
    init?(_ bytes: [UInt8], number: Int) {
        guard bytes.count >= 152,
            loadInteger(bytes, 10, as: UInt16.self) & DataFilePages.meta != 0,
            loadInteger(bytes, 16, as: UInt32.self) == DataFilePages.magic,
            loadInteger(bytes, 20, as: UInt32.self) == DataFilePages.dataVersion
        else { return nil }
        self.number = number
        freePages = DatabaseRecord(bytes, at: 40)
        main = DatabaseRecord(bytes, at: 88)
        pageSize = Int(freePages.pad)
        lastPage = loadInteger(bytes, 136, as: UInt64.self)
        transactionID = loadInteger(bytes, 144, as: UInt64.self)
        mapSize = Int(clamping: loadInteger(bytes, 32, as: UInt64.self))
    }
}
