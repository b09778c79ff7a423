extension StoreCore {
    /// The open databases of every type the store describes, by type number (descriptions that cannot be
    /// read, and types whose databases are damaged, are left out).
    ///
    /// Types this process has not opened yet (written by another process or an earlier run) are opened
    /// once through the writer, in a transaction that commits: LMDB closes the handles a read transaction
    /// opened when it ends, and opening handles must not race the writer's own.
    nonisolated(nonsending) func allSchemas() async throws -> [UInt32: TypeSchema] {
        let meta = self.meta
        let infos = try environment.read { txn in try TypeRegistry.all(meta: meta, txn: txn).infos }
        let known = statisticsSchemas.withLock { $0 }
        // A damaged type is left out, and once found so, not looked at again (nor through the writer).
        let (environment, logger) = (self.environment, self.logger)
        if infos.allSatisfy({ known[$0.number] != nil || environment.hasDamagedType($0.number) }) { return known }
        // The writer's job must not hold the core: it outlives the caller's resumption by a moment, and a store
        // whose last reference went would stay open until it ends.
        let opened = try await writer.performExclusive { writer in
            try writer.transact { context -> [UInt32: TypeSchema] in
                let infos = try TypeRegistry.all(meta: meta, txn: context.txn).infos
                let schemas = try TypeSchema.openUndamaged(infos, in: context.txn, logger: logger)
                // Two types of one number (a damaged `meta`): the first counts, rather than ending the process.
                return Dictionary(schemas.map { ($0.number, $0) }, uniquingKeysWith: { first, _ in first })
            }
        }
        return statisticsSchemas.withLock { schemas in
            schemas.merge(opened) { old, _ in old }
            return schemas
        }
    }
}
