extension PreparedRecord {
    /// Encodes `value` (in `format`, at the schema's version) and its index values, off the writer thread.
    ///
    /// - Throws: `invalidId` for an id that cannot key a record; `encodingFailed`.
    init<T: LocalStorable>(
        encoding value: T, schema: TypeSchema, format: PayloadFormat,
        indexValues: IndexValueFunction<T>? = nil
    ) throws {
        let id = try value.storageID()
        var values = indexValues?(value) ?? value.indexValues(in: schema)
        // Slotted here, off the writer, where the array is new; a value of an index the type never declared
        // keeps no slot, and the writer lays its header out named (``RecordHeader/laidOut(for:)``).
        _ = schema.assignSlots(&values)
        self.init(
            id: id, key: try RecordWriter.key(for: id), payload: try PayloadCodec.encode(value, as: format),
            format: format, version: schema.version, indexValues: values, value: value)
    }
}
