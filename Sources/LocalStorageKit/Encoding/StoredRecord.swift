/// The stored bytes of a record as a path that must go on whatever their state finds them: a record whose
/// header reads, or a damaged one.
///
/// The store's policy for a damaged record (one whose header or payload cannot be read): a read, query,
/// listing, page or count that meets it throws `decodingFailed` naming the type and the id; `verify` reports
/// it and `verify --repair` removes it. Only the paths that repair or remove records go on past one, and
/// they say so by switching on this type rather than dropping the error: saving the id again or deleting it
/// (the writer then finds the record's index entries by search), purging, rebuilding entries, `verify`
/// itself.
enum StoredRecord {
    /// The header reads (every length checked against the bytes).
    case readable(RecordView)
    /// The bytes are not a whole record; the error says what is wrong with them.
    case damaged(LocalStorageError)

    /// Reads the header of `bytes`; with `fixedPartOnly` only its fixed part (see
    /// ``RecordView/init(fixedPartOf:)``).
    init(_ bytes: UnsafeRawBufferPointer, fixedPartOnly: Bool = false) {
        do {
            self = .readable(try fixedPartOnly ? RecordView(fixedPartOf: bytes) : RecordView(bytes))
        } catch {
            self = .damaged(error)
        }
    }

    /// The view of a readable record; nil for a damaged one, which the caller handles in its own branch.
    var view: RecordView? {
        if case .readable(let view) = self { return view }
        return nil
    }

    /// The view of a readable record; for a damaged one, `decodingFailed` naming the type and the id, as
    /// every read reports it.
    func readable(type: String, id: String) throws(LocalStorageError) -> RecordView {
        switch self {
        case .readable(let view): return view
        case .damaged(let error):
            guard case .decodingFailed(let reason) = error else { throw error }
            throw .decodingFailed(reason: "\(type) \"\(id)\": \(reason)")
        }
    }

    /// Whether the bytes are damaged.
    var isDamaged: Bool { view == nil }
}
