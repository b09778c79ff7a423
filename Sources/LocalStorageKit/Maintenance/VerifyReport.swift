/// One inconsistency `verify` found, naming the type and, when there is one, the record id.
@_spi(Maintenance) public struct VerifyProblem: Codable, Sendable, Equatable, CustomStringConvertible {
    /// What kind of inconsistency it is.
    public enum Kind: String, Codable, Sendable {
        /// A `meta` entry is not a readable type description.
        case unreadableType
        /// A record's header cannot be parsed.
        case damagedRecord
        /// A record a newer version of LocalStorageKit wrote (a later header layout or payload format): this
        /// version cannot read it, and `repair` never removes it (a salvage lists it as lost).
        case newerRecord
        /// A record's payload cannot be turned into JSON.
        case undecodablePayload
        /// A record's index, update-time or expiry entry is missing.
        case missingEntry
        /// An index, update-time or expiry entry names a record that does not exist.
        case danglingEntry
        /// An entry names a record whose header holds another value.
        case mismatchedEntry
        /// The data file's pages are damaged: a page reference, a page or a database's own record (the
        /// type is `data.mdb`). Only `verify --repair`'s salvage into a fresh store helps.
        case damagedFile
        /// A counter of the count tree, or the type's payload-byte total, differs from what it counts.
        case wrongCount
        /// A record's sealed payload opens with none of the keys given (or no key was given): sealed with
        /// another key (a previous one during a rotation), by a newer library, or altered. Nothing here can
        /// tell these apart for sure, so `repair` and a salvage never remove such a record: pass its key to
        /// read it, or delete it by hand.
        case sealNotOpened
    }

    /// The type's storage name.
    public var type: String
    /// The record id, when the problem concerns one record.
    public var id: String?
    /// What kind of inconsistency it is.
    public var kind: Kind
    /// The details, in words.
    public var detail: String

    /// `Type "id": detail`.
    public var description: String {
        "\(type)" + (id.map { " \"\($0)\"" } ?? "") + ": \(detail)"
    }

    /// Whether rebuilding the type's index entries from the record headers fixes it.
    var isFixedByReindexing: Bool {
        [.missingEntry, .danglingEntry, .mismatchedEntry, .wrongCount].contains(kind)
    }
}

/// What `verify` found.
@_spi(Maintenance) public struct VerifyReport: Codable, Sendable {
    /// Types checked.
    public var types: Int
    /// Records checked.
    public var records: Int
    /// Index, update-time and expiry entries checked.
    public var entries: Int
    /// Every problem found, by type then record.
    public var problems: [VerifyProblem]
    /// The types whose index entries were rebuilt before this check (`verify --repair`).
    public var repairedTypes: [String]
    /// The records `verify --repair` removed because their bytes cannot be read.
    public var removedRecords: [VerifyProblem]

    /// Whether no problem was found.
    public var isClean: Bool { problems.isEmpty }
}
