import CLMDB
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The data file is shorter than the pages its meta page refers to.
struct TruncatedDataFile: Error, CustomStringConvertible {
    let length: Int
    let needed: Int

    var description: String {
        "the data file is truncated or damaged: it has \(length) bytes, its pages need \(needed)"
    }
}
