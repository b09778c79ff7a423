/// A type's records in the order of their update times, for `.newestFirst` and `.oldestFirst`, for the eviction
/// policies that take the least recently updated record, and for the re-index's search from the newest records back.
///
/// The order is a sorted-duplicates database, `u.<type#>` (update time → id). From layout 6 on a type keeps it only
/// once something walks it: an entry per record costs about 19 bytes on disk and a page written by every save, for a
/// sort most types never use. A type registered in a store of layout 6 starts without it (`meta` holds its marker,
/// ``markerKey(type:)``); ``keep(_:context:)`` builds it from the records' headers in one commit and removes the
/// marker, and from then on every write keeps it. A type never goes back. A store of an older layout keeps the order
/// for every type, as do the types a store of layout 5 had before a new type raised it to 6.
///
/// Without it, ``forEach(schema:descending:txn:_:)`` sorts the type's headers and notes that the type wants its order,
/// which the next query through the store builds (docs/DESIGN.md, "Update orders on demand").
enum UpdateOrder {
    /// The `meta` key whose presence says type `number` keeps no update order.
    static func markerKey(type number: UInt32) -> [UInt8] { Array("unordered.\(number)".utf8) }

    /// Marks a type registered just now as keeping no update order, in a store of layout 6, or of layout 5 when
    /// `mayRaiseLayout()` allows it (which then becomes 6: a version of layout 5 would miss the type's records in such
    /// a sort, so an app raises it only while no other process has the store open, and a version of layout 5 that
    /// opens it after is refused). Elsewhere the type keeps its order, as every type of the older layouts does.
    static func markNewType(
        _ number: UInt32, meta: Database, txn: Transaction, mayRaiseLayout: () -> Bool
    ) throws {
        let layout = try TypeRegistry.storedLayout(meta: meta, txn: txn) ?? 0
        if layout == TypeRegistry.updateOrderOnDemandLayout - 1, mayRaiseLayout() {
            try txn.put(
                meta, key: TypeRegistry.layoutKey, value: Array("\(TypeRegistry.updateOrderOnDemandLayout)".utf8))
        } else if layout < TypeRegistry.updateOrderOnDemandLayout {
            return
        }
        try txn.put(meta, key: markerKey(type: number), value: [1])
    }

    /// Starts keeping the type's update order if it keeps none: an entry for every record, appended in order (a
    /// record whose header cannot be read under time 0, where replacing or deleting it finds it by walking, as it
    /// finds a damaged record's other entries), then the marker removed. O(records log records), once. Returns
    /// whether the type keeps its order now. Never in the map's reserve (`context.inReserve`), which is kept for
    /// the deletes that make room: the caller sorts the headers instead.
    @discardableResult
    static func keep(_ schema: TypeSchema, context: CommitQueue.Context) throws -> Bool {
        let txn = context.txn
        guard try !schema.keepsUpdateOrder(txn), let marker = schema.unorderedMarker else { return true }
        guard !context.inReserve else { return false }
        try txn.empty(schema.updated)
        let places = try sortedPlaces(schema: schema, txn: txn)
        try SortedAppend.run(into: schema.updated, txn: txn) { run in
            for place in places {
                try run.add(key: RecordWriter.timeKey(Int64(bitPattern: place.time)), value: place.id, txn: txn)
            }
        }
        try txn.delete(marker.meta, key: marker.key)
        let runtime = schema.runtime
        context.onCommit { runtime.keepsUpdateOrder.store(true, ordering: .relaxed) }
        return true
    }

    /// Calls `body` with each of the type's records in update-time order (its time as the order's key sorts it, and
    /// its id; oldest first, newest first when `descending`; records of one time by id, as the database's duplicates
    /// are), until it returns false. From the order when the type keeps one; otherwise from every record's header,
    /// sorted the same way (O(records log records)), and the type is noted as wanting its order
    /// (``SchemaRuntime/updateOrderWanted``), which the next query through the store builds.
    static func forEach(
        schema: TypeSchema, descending: Bool, txn: Transaction,
        _ body: (_ time: UInt64, _ id: UnsafeRawBufferPointer) throws -> Bool
    ) throws {
        if try schema.keepsUpdateOrder(txn) {
            try txn.withCursor(schema.updated) { cursor in
                var entry = try cursor.move(descending ? .last : .first)
                while let current = entry {
                    // A key of another length is not the order's (damage): `verify` reports it.
                    if current.key.count == 8,
                        try !body(UInt64(bigEndian: current.key.loadUnaligned(as: UInt64.self)), current.value)
                    {
                        return
                    }
                    entry = try cursor.move(descending ? .previous : .next)
                }
            }
            return
        }
        schema.runtime.updateOrderWanted.store(true, ordering: .relaxed)
        for place in try sortedPlaces(schema: schema, txn: txn, descending: descending) {
            guard try place.id.withUnsafeBytes({ try body(place.time, $0) }) else { return }
        }
    }

    /// Every record of the type in the order's sense (oldest first, or newest first when `descending`), from its
    /// header: what a walk of the order would give, for a type without one.
    static func sortedPlaces(
        schema: TypeSchema, txn: Transaction, descending: Bool = false
    ) throws -> [(time: UInt64, id: [UInt8])] {
        try places(schema: schema, txn: txn).sorted { precedes($0, $1, descending: descending) }
    }

    /// A record's place in the order: its update time as the order's key sorts it (the time's bits, big-endian); 0,
    /// the oldest, for a header that cannot be read (a damaged record, or a newer version's), so that a walk meets it
    /// and its read says so instead of leaving it out.
    private typealias Place = (time: UInt64, id: [UInt8])

    /// Each record's place.
    private static func places(schema: TypeSchema, txn: Transaction) throws -> [Place] {
        var places: [Place] = []
        places.reserveCapacity(try txn.entryCount(schema.records))
        try txn.withCursor(schema.records) { cursor in
            var entry = try cursor.move(.first)
            while let current = entry {
                let time: UInt64
                do {
                    time = UInt64(bitPattern: try RecordView(fixedPartOf: current.value).updatedAt)
                } catch {
                    time = 0  // The oldest: a walk's read of it reports the damage.
                }
                places.append((time, Array(current.key)))
                entry = try cursor.move(.next)
            }
        }
        return places
    }

    /// Whether `a` comes before `b` in the order's direction: by time, then by id.
    private static func precedes(_ a: Place, _ b: Place, descending: Bool) -> Bool {
        if a.time != b.time { return descending ? a.time > b.time : a.time < b.time }
        return descending ? b.id.lexicographicallyPrecedes(a.id) : a.id.lexicographicallyPrecedes(b.id)
    }
}
