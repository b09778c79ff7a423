/// The rule by which change-log entries read together become the changes a reader gets: one per record, with its
/// latest state (the resumable change feed, ``ChangeFeed``, and one poll of other processes' commits,
/// ``LiveQueryCenter``).
extension ChangeLog {
    /// One entry per record of `entries` (entries read together, in commit order), at the place of its last
    /// one. An inserted or updated record's value is read from the store when the change is
    /// delivered, so earlier entries of the same record would carry that later value (an `.updated` with the
    /// value written after a delete that follows it): the record's latest state comes once instead. It is `.inserted` when the record's first entry here inserted it (it
    /// did not exist before), and a delete or expiry when that came last. A record's entries before a
    /// `.cleared` of its type are left out (the clear removed it: a consumer drops everything of the type there),
    /// so its first entry after the clear decides. `.cleared` and `.touched` entries stay as they are.
    static func latestPerRecord(_ entries: [ChangeLog.Entry]) -> [ChangeLog.Entry] {
        struct Record: Hashable {
            let type: UInt32
            let id: [UInt8]
        }
        func coalesces(_ entry: ChangeLog.Entry) -> Bool {
            switch entry.kind {
            case .inserted, .updated, .deleted, .expired: true
            case .cleared, .touched: false
            }
        }
        var lastClear: [UInt32: Int] = [:]
        for (index, entry) in entries.enumerated() where entry.kind == .cleared { lastClear[entry.type] = index }
        func isCleared(_ index: Int, _ entry: ChangeLog.Entry) -> Bool { index < lastClear[entry.type] ?? -1 }
        var last: [Record: (index: Int, insertedFirst: Bool)] = [:]
        for (index, entry) in entries.enumerated() where coalesces(entry) && !isCleared(index, entry) {
            let record = Record(type: entry.type, id: entry.id)
            let insertedFirst = last[record]?.insertedFirst ?? (entry.kind == .inserted)
            last[record] = (index, insertedFirst)
        }
        guard last.count < entries.count(where: coalesces) else { return entries }
        return entries.enumerated().compactMap { index, entry in
            guard coalesces(entry) else { return entry }
            guard !isCleared(index, entry), let latest = last[Record(type: entry.type, id: entry.id)],
                latest.index == index
            else { return nil }
            guard entry.kind == .updated, latest.insertedFirst else { return entry }
            return ChangeLog.Entry(
                sequence: entry.sequence, writer: entry.writer, type: entry.type, kind: .inserted, id: entry.id)
        }
    }
}
