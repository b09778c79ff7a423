/// The key check of an encrypted namespace: every instance on a namespace must seal with the same keys, or
/// one would replace records with payloads the others cannot open.
extension SharedTier {
    /// Checks the namespace's key check value on the server (`{ns}seal`) against this store's keys, writing it
    /// (`SET … NX`) when the namespace has none and this store has a key. Done once, before this instance's
    /// first catch-up or write.
    ///
    /// - Throws: `sharedTierUnavailable` when the namespace is encrypted with a key this store does not have,
    ///   or is encrypted and this store has no key (nothing was written).
    func checkNamespaceKey() async throws(LocalStorageError) {
        if state.withLock({ $0.namespaceKeyChecked }) { return }
        let sealing = core.sealing
        var stored = try await connection.call([Array("GET".utf8), layout.seal]).bytes
        if stored == nil, let check = try keyCheckValue(sealing) {
            _ = try await connection.call([Array("SET".utf8), layout.seal, check, Array("NX".utf8)])
            stored = try await connection.call([Array("GET".utf8), layout.seal]).bytes
        }
        let namespace = String(decoding: layout.prefix, as: UTF8.self)
        if let stored, !sealing.opensKeyCheck(stored) {
            throw .sharedTierUnavailable(
                sealing.current == nil
                    ? "the namespace \(namespace) at \(endpoint.label) is encrypted and this store has no key"
                    : "the namespace \(namespace) at \(endpoint.label) is encrypted with another key than this "
                        + "store's (give every instance on a namespace the same keys)")
        }
        state.withLock { $0.namespaceKeyChecked = true }
    }

    private func keyCheckValue(_ sealing: PayloadSealing) throws(LocalStorageError) -> [UInt8]? {
        do {
            return try sealing.keyCheckValue()
        } catch {
            throw LocalStorageError.wrapping(error)
        }
    }
}
