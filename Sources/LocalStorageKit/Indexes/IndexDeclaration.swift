/// The names and kinds of a type's indexes, in declaration order, and their signature.
///
/// Stored in the `meta` database per type (the CLI reads it) and, as ``signature``, in every record
/// header, so a changed declaration is noticed record by record.
struct IndexDeclaration: Sendable, Equatable, Codable {
    struct Entry: Sendable, Equatable, Codable {
        let name: String
        let kind: IndexKind
    }

    let entries: [Entry]

    static let none = IndexDeclaration(entries: [])

    /// The signature a record carries when the declaration it was indexed with is not known: an import of a record
    /// whose declaration the store does not describe (an export names each type's newest only). Its entries are
    /// those of the type's newest declaration, and it is stale to every declaration, whose app re-indexes it.
    /// (FNV-1a of a declaration is 0 with odds of one in 2⁶⁴.)
    static let unknownSignature: UInt64 = 0

    /// FNV-1a over names and kinds in order: changes when an index is added, removed, renamed,
    /// reordered or changes kind.
    ///
    /// Each entry is its name, a 0 and its kind (1 or 2). A 0 inside a name goes in as 0, 0xFF, which no kind
    /// is, so two declarations never hash the same bytes (`"a"` then `"b"` against one name `"a\0\u{1}b"`
    /// did: review-83 #6); names without a 0, every declaration before, keep their signatures.
    var signature: UInt64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        func mix(_ byte: UInt8) {
            hash ^= UInt64(byte)
            hash = hash &* 0x0000_0100_0000_01b3
        }
        for entry in entries {
            for byte in entry.name.utf8 {
                mix(byte)
                if byte == 0 { mix(0xFF) }
            }
            mix(0)
            mix(entry.kind.rawValue)
        }
        return hash
    }

    /// The most indexes one type may declare.
    static let maxIndexes = 64
    /// The longest storage name, in bytes of UTF-8 (its `meta` key must fit LMDB's 511-byte limit).
    static let maxTypeNameBytes = 500
    /// The longest index name, in bytes of UTF-8 (record headers store its length in one byte).
    static let maxIndexNameBytes = 255

    /// Checks a type's storage name and this declaration.
    ///
    /// - Parameter type: The Swift type's name, named in the error.
    /// - Throws: `invalidDeclaration` naming the type and the problem.
    func validate(storageName: String, type: String) throws(LocalStorageError) {
        let subject = "\(type) (storageName \"\(storageName)\")"
        if storageName.isEmpty { throw .invalidDeclaration("\(type): storageName must not be empty") }
        let nameBytes = storageName.utf8.count
        if nameBytes > IndexDeclaration.maxTypeNameBytes {
            throw .invalidDeclaration(
                "\(type): storageName has \(nameBytes) bytes of UTF-8; at most "
                    + "\(IndexDeclaration.maxTypeNameBytes) are allowed")
        }
        if entries.count > IndexDeclaration.maxIndexes {
            throw .invalidDeclaration(
                "\(subject) declares \(entries.count) indexes; at most "
                    + "\(IndexDeclaration.maxIndexes) are allowed")
        }
        var seen: Set<String> = []
        for entry in entries {
            if entry.name.isEmpty { throw .invalidDeclaration("\(subject) declares an index with an empty name") }
            let bytes = entry.name.utf8.count
            if bytes > IndexDeclaration.maxIndexNameBytes {
                throw .invalidDeclaration(
                    "\(subject): index name \"\(entry.name.prefix(40))…\" has \(bytes) bytes "
                        + "of UTF-8; at most \(IndexDeclaration.maxIndexNameBytes) are allowed")
            }
            if !seen.insert(entry.name).inserted {
                throw .invalidDeclaration("\(subject) declares two indexes named \"\(entry.name)\"")
            }
        }
    }

    /// The declaration of `T`'s indexes (empty for types that declare none).
    static func of<T: LocalStorable>(_ type: T.Type) -> IndexDeclaration {
        guard let indexed = type as? any LocalStorageIndexed.Type else { return .none }
        return indexed.indexDeclaration
    }

    /// `T`'s declaration and the function computing a value's index values with it, from one reading of
    /// `storageIndexes`: a declaration that reads a flag can differ from one reading to the next, and a schema
    /// must index its records with the declaration it was registered with (review-74 #2).
    static func read<T: LocalStorable>(
        _ type: T.Type
    ) -> (declaration: IndexDeclaration, computer: IndexValueFunction<T>) {
        guard let indexed = type as? any LocalStorageIndexed.Type else { return (.none, { _ in [] }) }
        let (declaration, computer) = indexed.declarationAndComputer()
        return (declaration, computer as? IndexValueFunction<T> ?? { $0.indexValuesForStorage })
    }
}

extension LocalStorageIndexed {
    static var indexDeclaration: IndexDeclaration { declaration(of: storageIndexes) }

    /// The names and kinds of `indexes`.
    static func declaration(of indexes: [StorageIndex<Self>]) -> IndexDeclaration {
        IndexDeclaration(entries: indexes.map { IndexDeclaration.Entry(name: $0.name, kind: $0.kind) })
    }

    /// This value's index values in declaration order; nil and NaN values are left out.
    var storedIndexValues: [StoredIndexValue] {
        Self.storageIndexes.compactMap { index in
            guard let value = index.extract(self), let bytes = value.storedBytes else { return nil }
            return StoredIndexValue(name: index.name, kind: index.kind, bytes: bytes)
        }
    }
}

extension LocalStorable {
    /// This value's index values (none unless the type is ``LocalStorageIndexed``), from the type's declaration as
    /// it reads now.
    var indexValuesForStorage: [StoredIndexValue] {
        guard let indexed = self as? any LocalStorageIndexed else { return [] }
        return indexed.storedIndexValues
    }

    /// This value's index values as `schema` computes them: with the declaration the schema was made from, read
    /// once (``SchemaRuntime/indexValueComputer(for:)``).
    func indexValues(in schema: TypeSchema) -> [StoredIndexValue] {
        schema.runtime.indexValueComputer(for: Self.self)(self)
    }

    /// A function computing index values with the declaration read once: for batches, where asking
    /// `storageIndexes` (and casting to find it) per value costs more than the values themselves.
    static func indexValueComputer() -> IndexValueFunction<Self> {
        IndexDeclaration.read(Self.self).computer
    }
}

extension LocalStorageIndexed {
    /// The declaration of ``storageIndexes`` and ``erasedIndexValueComputer(_:)`` of the same reading.
    static func declarationAndComputer() -> (IndexDeclaration, any Sendable) {
        let indexes = storageIndexes
        return (declaration(of: indexes), erasedIndexValueComputer(indexes))
    }

    /// ``LocalStorable/indexValueComputer()`` for `indexes`, type-erased so it can leave the existential.
    ///
    /// Each index's name, kind and extraction are taken out of the declaration once, the extraction behind a
    /// raw pointer to the value: the loop run per value then touches no type made from `Self` (such as
    /// `StorageIndex<Self>`), whose metadata unspecialized code would look up in the runtime for every value.
    static func erasedIndexValueComputer(_ indexes: [StorageIndex<Self>]) -> any Sendable {
        let names = indexes.map(\.name)
        let kinds = indexes.map(\.kind)
        let extracts: [@Sendable (UnsafeRawPointer) -> IndexValue?] = indexes.map { index in
            let extract = index.extract
            return { pointer in extract(pointer.assumingMemoryBound(to: Self.self).pointee) }
        }
        let compute: IndexValueFunction<Self> = { value in
            withUnsafePointer(to: value) { pointer in
                var stored: [StoredIndexValue] = []
                stored.reserveCapacity(extracts.count)
                for position in extracts.indices {
                    guard let indexValue = extracts[position](UnsafeRawPointer(pointer)),
                        let bytes = indexValue.storedBytes
                    else { continue }
                    stored.append(StoredIndexValue(name: names[position], kind: kinds[position], bytes: bytes))
                }
                return stored
            }
        }
        return compute
    }
}

/// A function computing a value's index values with one reading of its declaration: it holds only the
/// declaration's names, kinds and `@Sendable` extractions, keeps no state between calls, and is shared between
/// threads.
typealias IndexValueFunction<T> = @Sendable (T) -> [StoredIndexValue]
