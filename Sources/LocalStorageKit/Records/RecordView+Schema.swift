/// Reading and writing record headers with their type's schema: a compact header (``RecordLayout/compact``) names
/// its index values by the slot numbers of the type's description, which the schema holds.
extension RecordView {
    /// The stored value of `index`, or nil when the record has none (or one of another kind).
    func indexValue(of index: TypeSchema.Index) -> UnsafeRawBufferPointer? {
        var found: UnsafeRawBufferPointer?
        forEachIndexValue { tag, kind, value in
            if kind == index.kind, tag.names(index) {
                found = value
                return false
            }
            return true
        }
        return found
    }

    /// The signature of the declaration the record was indexed with: a compact header's declaration number is
    /// looked up in `schema`, or (a declaration registered since the schema was opened) in the type's description
    /// in `txn`.
    ///
    /// - Throws: `decodingFailed` when a compact header names a declaration the type's description lacks.
    func signature(in schema: TypeSchema, txn: Transaction?) throws -> UInt64 {
        var described = Described(schema: schema, txn: txn)
        return try signature(type: schema.name) { try described.signature(numbered: $0) }
    }

    /// Copies the header out of the map. A compact header's slot numbers are named from `schema`'s indexes, or
    /// (a slot registered since the schema was opened) from the type's description in `txn`.
    ///
    /// - Throws: `decodingFailed` when a compact header names a slot the type's description lacks, or with
    ///   another kind (a damaged header).
    func header(in schema: TypeSchema, txn: Transaction?) throws -> RecordHeader {
        var described = Described(schema: schema, txn: txn)
        return try header(type: schema.name) {
            try described.index(numbered: $0)
        } signature: {
            try described.signature(numbered: $0)
        }
    }

    /// A schema's numbers, and the type's description in a transaction for numbers registered since the schema
    /// was opened (opened once, when first needed).
    private struct Described {
        let schema: TypeSchema
        let txn: Transaction?
        private var current: TypeSchema??

        init(schema: TypeSchema, txn: Transaction?) {
            self.schema = schema
            self.txn = txn
        }

        private mutating func currentSchema() throws -> TypeSchema? {
            if let current { return current }
            let opened = try txn.flatMap { try schema.current(in: $0) }
            current = .some(opened)
            return opened
        }

        mutating func index(numbered slot: UInt32) throws -> (name: String, kind: IndexKind)? {
            let index =
                try schema.allIndexes.first { $0.slot == slot }
                ?? currentSchema()?.allIndexes.first { $0.slot == slot }
            return index.map { ($0.name, $0.kind) }
        }

        mutating func signature(numbered number: UInt32) throws -> UInt64? {
            let position = Int(number)
            if position < schema.declarationSignatures.count { return schema.declarationSignatures[position] }
            guard let current = try currentSchema(), position < current.declarationSignatures.count else { return nil }
            return current.declarationSignatures[position]
        }
    }

    /// Copies the header out of the map, a compact header's numbers named from `info` (the type's description, as
    /// the snapshot the record was read in has it: maintenance reads records with no schema of its own).
    ///
    /// - Throws: `decodingFailed` when a compact header names a slot or declaration `info` lacks.
    func header(describedBy info: TypeInfo) throws -> RecordHeader {
        try header(type: info.name) { slot in
            info.slots.first { $0.number == slot }.map { ($0.name, $0.kind) }
        } signature: { number in
            Int(number) < info.declarations.count ? info.declarations[Int(number)].signature : nil
        }
    }

    /// The header, with `slot` naming a compact header's slot numbers and `signature` its declaration number.
    private func header(
        type: String, slot: (UInt32) throws -> (name: String, kind: IndexKind)?,
        signature: (UInt32) throws -> UInt64?
    ) throws -> RecordHeader {
        var values: [StoredIndexValue] = []
        try forEachIndexValue { tag, kind, value in
            switch tag {
            case .name(let name):
                values.append(
                    StoredIndexValue(name: String(decoding: name, as: UTF8.self), kind: kind, bytes: Array(value)))
            case .slot(let number):
                guard let index = try slot(number), index.kind == kind else {
                    throw LocalStorageError.decodingFailed(
                        reason: "the record header names index slot \(number), which the description of type "
                            + "\(type) lacks (or has with another kind); it is damaged")
                }
                values.append(StoredIndexValue(name: index.name, kind: kind, bytes: Array(value), slot: number))
            }
            return true
        }
        var header = RecordHeader(
            format: format, version: version, createdAt: createdAt, updatedAt: updatedAt,
            expiresAt: expiresAt, signature: try self.signature(type: type, numbered: signature), indexValues: values,
            envelope: envelope, layout: layout)
        if case .number(let number) = declaration { header.declarationNumber = number }
        return header
    }

    /// The declaration's signature: a named header's own, or a compact header's number looked up by `numbered`.
    private func signature(type: String, numbered: (UInt32) throws -> UInt64?) throws -> UInt64 {
        switch declaration {
        case .signature(let stored):
            return stored
        case .number(let number):
            guard let found = try numbered(number) else {
                throw LocalStorageError.decodingFailed(
                    reason: "the record header names index declaration \(number), which the description of type "
                        + "\(type) lacks; it is damaged")
            }
            return found
        }
    }
}

extension StoredIndexTag {
    /// Whether the tag names `index` (its name's bytes, or its slot number).
    @inline(__always)
    func names(_ index: TypeSchema.Index) -> Bool {
        switch self {
        case .name(let name): name.elementsEqual(index.nameBytes)
        case .slot(let slot): slot == index.slot
        }
    }
}

extension RecordHeader {
    /// This header ready to be written for `schema`'s records: a compact one with each index value's slot
    /// number, or named when `schema` knows no index of some value. A named header stays named.
    func laidOut(for schema: TypeSchema) -> RecordHeader {
        var header = self
        guard layout == .compact else { return header }
        // The declaration by number: the signature's position in the type's description.
        guard let position = schema.declarationSignatures.firstIndex(of: signature) else {
            header.layout = .named
            return header
        }
        header.declarationNumber = UInt32(position)
        // Values prepared off the writer have their slots already (``TypeSchema/assignSlots(_:)``): the array,
        // shared with the prepared record, is then not copied here.
        if !schema.assignSlots(&header.indexValues) { header.layout = .named }
        return header
    }
}

extension StoredRecord {
    /// A readable record with its header copied out (a compact header's slots named), or a damaged one.
    enum Headed {
        case readable(RecordView, RecordHeader)
        case damaged(LocalStorageError)
    }

    /// The record with its header (see ``RecordView/header(in:txn:)``): a header that names a slot its type's
    /// description lacks is damaged too.
    ///
    /// - Throws: what reading the type's description in `txn` throws (LMDB's errors).
    func header(in schema: TypeSchema, txn: Transaction?) throws -> Headed {
        try header { try $0.header(in: schema, txn: txn) }
    }

    /// The record with its header as `read` copies it; a `decodingFailed` from `read` makes it damaged.
    func header(_ read: (RecordView) throws -> RecordHeader) throws -> Headed {
        switch self {
        case .damaged(let error):
            return .damaged(error)
        case .readable(let view):
            do {
                return .readable(view, try read(view))
            } catch let error as LocalStorageError {
                guard case .decodingFailed = error else { throw error }
                return .damaged(error)
            }
        }
    }
}

extension TypeSchema {
    /// Gives each of `values` without a slot the slot of its index in this type's description; false when some
    /// value names an index the type never declared (its header must then be named). Values computed from the
    /// model come in the declaration's order, so most are matched by position.
    func assignSlots(_ values: inout [StoredIndexValue]) -> Bool {
        let declared = indexes
        for position in values.indices where values[position].slot == nil {
            let value = values[position]
            if position < declared.count, declared[position].kind == value.kind, declared[position].name == value.name {
                values[position].slot = declared[position].slot
                continue
            }
            guard
                let index = allIndexes.first(where: {
                    $0.kind == value.kind && $0.name.utf8.elementsEqual(value.name.utf8)
                })
            else { return false }
            values[position].slot = index.slot
        }
        return true
    }
}
