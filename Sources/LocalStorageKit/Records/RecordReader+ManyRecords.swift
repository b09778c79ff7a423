import Foundation

/// `fetch(_:ids:)`'s reads: every id looked up in one snapshot, with nothing per id but the lookup and the
/// decode (string ids are taken as they are; no per-id result tuple or id conversion). The decodes, most of the
/// work, run on every processor when there are many.
extension RecordReader {
    /// The live records among `ids` from one snapshot, keyed by id, and the keys of the expired ones met;
    /// each record found is a use of it (`session`'s ``DecodeSession/noteUse``).
    ///
    /// - Throws: `invalidId` for an id that cannot key a record; `decodingFailed`; `migrationFailed`. When
    ///   several records cannot be read, the error is the first one's in `ids`.
    static func getMany<T: LocalStorable>(
        _ type: T.Type, ids: [T.ID], schema: TypeSchema, now: Int64, txn: Transaction, session: DecodeSession
    ) throws -> (found: [T.ID: T], expired: [[UInt8]]) {
        let names = try StorageKey.strings(for: ids)
        var expired: [[UInt8]] = []
        // The live records' headers, read first; their payloads stay in the snapshot's pages until decoded.
        var positions: [Int] = []
        var views: [RecordView] = []
        positions.reserveCapacity(ids.count)
        views.reserveCapacity(ids.count)
        // A damaged header stops the lookups, as a serial read would stop there: a record before it that does not
        // decode is the first error.
        var damaged: (any Error)?
        let records = schema.records
        for position in names.indices {
            var name = names[position]
            do {
                try name.withUTF8 { utf8 in
                    let key = UnsafeRawBufferPointer(utf8)
                    try RecordWriter.validate(keyLength: key.count)
                    guard let bytes = try txn.get(records, key: key) else { return }
                    let view = try RecordDecoding.view(of: bytes, T.self, id: names[position], fixedPartOnly: true)
                    if view.isExpired(at: now) {
                        expired.append(Array(key))
                    } else {
                        positions.append(position)
                        views.append(view)
                    }
                }
            } catch {
                damaged = error
                break
            }
        }
        var values = try decodeAll(T.self, views, ids: positions.map { names[$0] }, session: session)
        if let damaged { throw damaged }
        var found: [T.ID: T] = [:]
        found.reserveCapacity(values.count)
        for (position, value) in zip(positions, values) {
            found.updateValue(value, forKey: ids[position])
        }
        values.removeAll()
        if let noteUse = session.noteUse {
            for position in positions {
                var name = names[position]
                name.withUTF8 { noteUse(UnsafeRawBufferPointer($0)) }
            }
        }
        return (found, expired)
    }

    /// Fewest records a thread of ``decodeAll(_:_:ids:session:)`` decodes: below twice that, the calling thread
    /// decodes them all (handing work to another thread costs about as much as a few decodes).
    static var decodingChunk: Int { 16 }

    /// The records `views` point at, decoded in their order.
    ///
    /// Many are decoded in contiguous chunks on every processor, each chunk with a sibling of `session`, whose
    /// upgrades `session` takes back in order; the calling thread decodes a chunk and waits for the others, so
    /// the read transaction whose pages `views` point into stays open until every decode is done. When records
    /// fail to decode, the error of the first of them is thrown, as one thread would.
    static func decodeAll<T: LocalStorable>(
        _ type: T.Type, _ views: [RecordView], ids: [String], session: DecodeSession
    ) throws -> [T] {
        let threads = min(ProcessInfo.processInfo.activeProcessorCount, views.count / decodingChunk)
        guard threads > 1 else {
            return try views.indices.map {
                try RecordDecoding.decode(T.self, view: views[$0], id: ids[$0], session: session)
            }
        }
        let work = ParallelDecoding<T>(views: views, ids: ids, parts: threads, session: session)
        DispatchQueue.concurrentPerform(iterations: threads) { work.decode(part: $0) }
        return try work.values(into: session)
    }
}

/// The parts of one ``RecordReader/decodeAll(_:_:ids:session:)`` on several threads.
///
/// Unchecked: each thread decodes the records of its own part with its own session and writes its own result
/// slot; the views only read pages of the caller's read transaction, which stays open until
/// `concurrentPerform` returns, and the results are read after it did.
private final class ParallelDecoding<T: LocalStorable>: @unchecked Sendable {
    let views: [RecordView]
    let ids: [String]
    let chunk: Int
    let sessions: [DecodeSession]
    /// A slot per part (not an array: threads writing elements of one array at once would each access all of it).
    let results: UnsafeMutableBufferPointer<Result<[T], any Error>>

    init(views: [RecordView], ids: [String], parts: Int, session: DecodeSession) {
        self.views = views
        self.ids = ids
        chunk = (views.count + parts - 1) / parts
        sessions = (0..<parts).map { _ in session.sibling() }
        results = .allocate(capacity: parts)
        results.initialize(repeating: .success([]))
    }

    deinit {
        results.deinitialize()
        results.deallocate()
    }

    /// Decodes the `part`th chunk into its slot (a thread's share).
    func decode(part: Int) {
        let range = min(views.count, part * chunk)..<min(views.count, (part + 1) * chunk)
        let decoded = Result {
            try range.map { try RecordDecoding.decode(T.self, view: views[$0], id: ids[$0], session: sessions[part]) }
        }
        results[part] = decoded
    }

    /// Every part's values in order, and their upgrades handed to `session`; throws the first part's error.
    func values(into session: DecodeSession) throws -> [T] {
        var values: [T] = []
        values.reserveCapacity(views.count)
        for (part, decoded) in results.enumerated() {
            values += try decoded.get()
            session.absorb(sessions[part])
        }
        return values
    }
}
