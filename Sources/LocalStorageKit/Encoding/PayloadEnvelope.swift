/// What was done to a payload after its codec wrote it: flags in the high bits of the record header's
/// format byte (the low bits hold the ``PayloadFormat``). A library that predates them reads such a format
/// byte as unknown and refuses the record instead of misreading it.
struct PayloadEnvelope: OptionSet, Sendable, Hashable {
    let rawValue: UInt8

    /// Compressed with zstd (see ``PayloadCompressor``): a dictionary id, then a zstd frame.
    static let compressed = PayloadEnvelope(rawValue: 0x40)
    /// Sealed with XChaCha20-Poly1305 (see ``PayloadSealing``): version, key id, nonce, ciphertext, tag.
    static let sealed = PayloadEnvelope(rawValue: 0x80)

    /// The bits of the format byte that hold envelope flags.
    static let mask: UInt8 = 0xC0
}
