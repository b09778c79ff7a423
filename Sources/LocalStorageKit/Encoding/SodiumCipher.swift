import CSodium

/// libsodium's AEAD ciphers: a random nonce per message (no counter state to share between processes) and a
/// 16-byte tag.
///
/// - ``Algorithm/xChaCha20Poly1305``: XChaCha20-Poly1305 (IETF), a 24-byte nonce. It runs on every CPU, so
///   what another machine must read (the key check value, dictionaries, the shared tier's payloads) uses it.
/// - ``Algorithm/aes256GCM``: AES-256-GCM, a 12-byte nonce, about three times faster on small payloads
///   where the CPU has AES instructions (libsodium 1.0.18 offers it only on x86-64 with AES-NI and
///   PCLMULQDQ). A store's own record payloads use it there.
enum SodiumCipher {
    enum Algorithm: Sendable {
        case xChaCha20Poly1305
        case aes256GCM

        /// The length of the nonce stored in front of the ciphertext.
        var nonceLength: Int {
            switch self {
            case .xChaCha20Poly1305: Int(crypto_aead_xchacha20poly1305_ietf_NPUBBYTES)
            case .aes256GCM: Int(crypto_aead_aes256gcm_NPUBBYTES)
            }
        }
    }

    static let keyLength = Int(crypto_aead_xchacha20poly1305_ietf_KEYBYTES)
    static let tagLength = Int(crypto_aead_xchacha20poly1305_ietf_ABYTES)

    /// Whether libsodium initialised (`sodium_init`, called once per process).
    static let isReady: Bool = sodium_init() >= 0

    /// Whether this CPU runs libsodium's AES-256-GCM (AES-NI and PCLMULQDQ).
    static let hasAES256GCM: Bool = isReady && crypto_aead_aes256gcm_is_available() == 1

    /// A key and, where the CPU has AES-256-GCM, its expanded AES schedule (computed once, shared by every
    /// thread: libsodium only reads it).
    final class Key: @unchecked Sendable {
        let bytes: [UInt8]
        /// libsodium's `crypto_aead_aes256gcm_state` (16-byte aligned); nil without AES-256-GCM.
        private let schedule: UnsafeMutableRawPointer?

        init(_ bytes: [UInt8]) {
            self.bytes = bytes
            guard hasAES256GCM, bytes.count == keyLength else {
                schedule = nil
                return
            }
            let size = MemoryLayout<crypto_aead_aes256gcm_state>.size
            let state = UnsafeMutableRawPointer.allocate(byteCount: size, alignment: 16)
            _ = crypto_aead_aes256gcm_beforenm(state.assumingMemoryBound(to: crypto_aead_aes256gcm_state.self), bytes)
            schedule = state
        }

        deinit {
            guard let schedule else { return }
            sodium_memzero(schedule, MemoryLayout<crypto_aead_aes256gcm_state>.size)
            schedule.deallocate()
        }

        /// The expanded AES key, or nil where the CPU lacks AES-256-GCM.
        var aesState: UnsafePointer<crypto_aead_aes256gcm_state>? {
            schedule.map { UnsafePointer($0.assumingMemoryBound(to: crypto_aead_aes256gcm_state.self)) }
        }
    }

    /// `prefix`, then a random nonce, then `plain` encrypted under `key` with `associated` authenticated,
    /// then the tag.
    ///
    /// - Throws: `encodingFailed` when libsodium is unusable, or `algorithm` is AES-256-GCM on a CPU without
    ///   it (callers ask ``hasAES256GCM`` first).
    static func seal(
        _ plain: UnsafeRawBufferPointer, associated: UnsafeRawBufferPointer, key: Key, prefix: [UInt8],
        algorithm: Algorithm = .xChaCha20Poly1305
    ) throws(LocalStorageError) -> [UInt8] {
        guard isReady, key.bytes.count == keyLength else {
            throw .encodingFailed(reason: "libsodium could not be initialised")
        }
        let nonceLength = algorithm.nonceLength
        let start = prefix.count + nonceLength
        var out = prefix + [UInt8](repeating: 0, count: nonceLength + plain.count + tagLength)
        let code = out.withUnsafeMutableBytes { out -> Int32 in
            guard let base = out.baseAddress?.assumingMemoryBound(to: UInt8.self) else { return -1 }
            randombytes_buf(base + prefix.count, nonceLength)
            var written: UInt64 = 0
            let message = plain.baseAddress?.assumingMemoryBound(to: UInt8.self)
            let data = associated.baseAddress?.assumingMemoryBound(to: UInt8.self)
            switch algorithm {
            case .xChaCha20Poly1305:
                return crypto_aead_xchacha20poly1305_ietf_encrypt(
                    base + start, &written, message, UInt64(plain.count), data, UInt64(associated.count), nil,
                    base + prefix.count, key.bytes)
            case .aes256GCM:
                guard let state = key.aesState else { return -1 }
                return crypto_aead_aes256gcm_encrypt_afternm(
                    base + start, &written, message, UInt64(plain.count), data, UInt64(associated.count), nil,
                    base + prefix.count, state)
            }
        }
        guard code == 0 else { throw .encodingFailed(reason: "sealing a payload failed") }
        return out
    }

    /// The plaintext of `sealed` (nonce, ciphertext, tag), or nil when it does not authenticate under `key`
    /// with `associated` (or `algorithm` is AES-256-GCM on a CPU without it).
    static func open(
        _ sealed: UnsafeRawBufferPointer, associated: [UInt8], key: Key,
        algorithm: Algorithm = .xChaCha20Poly1305
    ) -> [UInt8]? {
        guard let count = plainCount(sealed.count, algorithm) else { return nil }
        var opened = false
        let plain = [UInt8](unsafeUninitializedCapacity: count) { plain, initialized in
            opened = associated.withUnsafeBytes { associated in
                open(
                    sealed, associated: associated, key: key, algorithm: algorithm,
                    into: UnsafeMutableRawBufferPointer(plain))
            }
            initialized = opened ? count : 0
        }
        return opened ? plain : nil
    }

    /// The length of the plaintext of a sealed message of `sealedCount` bytes, or nil when it is too short.
    static func plainCount(_ sealedCount: Int, _ algorithm: Algorithm) -> Int? {
        let count = sealedCount - algorithm.nonceLength - tagLength
        return count >= 0 ? count : nil
    }

    /// Opens `sealed` (nonce, ciphertext, tag) into `plain`, which holds exactly its ``plainCount(_:_:)``
    /// bytes; false when it does not authenticate under `key` with `associated` (`plain` then holds zeros).
    static func open(
        _ sealed: UnsafeRawBufferPointer, associated: UnsafeRawBufferPointer, key: Key, algorithm: Algorithm,
        into plain: UnsafeMutableRawBufferPointer
    ) -> Bool {
        let nonceLength = algorithm.nonceLength
        guard isReady, key.bytes.count == keyLength, plainCount(sealed.count, algorithm) == plain.count,
            let base = sealed.baseAddress?.assumingMemoryBound(to: UInt8.self)
        else { return false }
        var written: UInt64 = 0
        let out = plain.baseAddress?.assumingMemoryBound(to: UInt8.self)
        let data = associated.baseAddress?.assumingMemoryBound(to: UInt8.self)
        let code: Int32
        switch algorithm {
        case .xChaCha20Poly1305:
            code = crypto_aead_xchacha20poly1305_ietf_decrypt(
                out, &written, nil, base + nonceLength, UInt64(sealed.count - nonceLength), data,
                UInt64(associated.count), base, key.bytes)
        case .aes256GCM:
            guard let state = key.aesState else { return false }
            code = crypto_aead_aes256gcm_decrypt_afternm(
                out, &written, nil, base + nonceLength, UInt64(sealed.count - nonceLength), data,
                UInt64(associated.count), base, state)
        }
        return code == 0 && written == UInt64(plain.count)
    }

    /// Eight bytes that name `key` without revealing it (its keyed BLAKE2b hash of a constant): where a
    /// store counts what it sealed with the key.
    static func fingerprint(_ key: [UInt8]) -> [UInt8] {
        var hash = [UInt8](repeating: 0, count: 16)
        let label = Array("LocalStorageKit key fingerprint".utf8)
        _ = crypto_generichash(&hash, hash.count, label, UInt64(label.count), key, key.count)
        return Array(hash[0..<8])
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
