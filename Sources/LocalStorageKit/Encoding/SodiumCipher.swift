import CSodium

/// libsodium's XChaCha20-Poly1305 (IETF) AEAD: a 24-byte random nonce per message (no counter state to
/// share between processes), a 16-byte tag.
enum SodiumCipher {
    static let keyLength = Int(crypto_aead_xchacha20poly1305_ietf_KEYBYTES)
    static let nonceLength = Int(crypto_aead_xchacha20poly1305_ietf_NPUBBYTES)
    static let tagLength = Int(crypto_aead_xchacha20poly1305_ietf_ABYTES)

    /// Whether libsodium initialised (`sodium_init`, called once per process).
    static let isReady: Bool = sodium_init() >= 0

    /// `prefix`, then a random nonce, then `plain` encrypted under `key` with `associated` authenticated,
    /// then the tag.
    static func seal(
        _ plain: UnsafeRawBufferPointer, associated: [UInt8], key: [UInt8], prefix: [UInt8]
    ) throws(LocalStorageError) -> [UInt8] {
        guard isReady, key.count == keyLength else {
            throw .encodingFailed(reason: "libsodium could not be initialised")
        }
        let start = prefix.count + nonceLength
        var out = prefix + [UInt8](repeating: 0, count: nonceLength + plain.count + tagLength)
        let code = out.withUnsafeMutableBytes { out -> Int32 in
            guard let base = out.baseAddress?.assumingMemoryBound(to: UInt8.self) else { return -1 }
            randombytes_buf(base + prefix.count, nonceLength)
            var written: UInt64 = 0
            return crypto_aead_xchacha20poly1305_ietf_encrypt(
                base + start, &written, plain.baseAddress?.assumingMemoryBound(to: UInt8.self),
                UInt64(plain.count), associated, UInt64(associated.count), nil, base + prefix.count, key)
        }
        guard code == 0 else { throw .encodingFailed(reason: "sealing a payload failed") }
        return out
    }

    /// The plaintext of `sealed` (nonce, ciphertext, tag), or nil when it does not authenticate under `key`
    /// with `associated`.
    static func open(_ sealed: UnsafeRawBufferPointer, associated: [UInt8], key: [UInt8]) -> [UInt8]? {
        guard isReady, key.count == keyLength, sealed.count >= nonceLength + tagLength,
            let base = sealed.baseAddress?.assumingMemoryBound(to: UInt8.self)
        else { return nil }
        var plain = [UInt8](repeating: 0, count: sealed.count - nonceLength - tagLength)
        let code = plain.withUnsafeMutableBufferPointer { plain -> Int32 in
            var written: UInt64 = 0
            return crypto_aead_xchacha20poly1305_ietf_decrypt(
                plain.baseAddress, &written, nil, base + nonceLength, UInt64(sealed.count - nonceLength),
                associated, UInt64(associated.count), base, key)
        }
        return code == 0 ? plain : nil
    }

    /// A one-byte name for `key` (the first byte of its keyed BLAKE2b hash of a constant), stored with each
    /// sealed payload so that a read tries the right key first. Two keys may share it: reads try each.
    static func keyID(_ key: [UInt8]) -> UInt8 {
        var hash = [UInt8](repeating: 0, count: 16)
        let label = Array("LocalStorageKit key id".utf8)
        _ = crypto_generichash(&hash, hash.count, label, UInt64(label.count), key, key.count)
        return hash[0]
    }
}
