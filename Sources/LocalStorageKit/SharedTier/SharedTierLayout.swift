/// The key names of one namespace on the shared tier (docs/DESIGN.md, "Sharing a cache between hosts").
///
/// ```
/// {ns}:r:{type}:{id}      header + payload, the same bytes as the LMDB record, with a PX time to live
/// {ns}:i:{type}:{index}   sorted set, score 0, members `ordered key ‖ id` (ZRANGEBYLEX = memcmp order)
/// {ns}:k:{type}           sorted set, score 0, members `id` (listing and counting by id)
/// {ns}:u:{type}           sorted set, score 0, members `updatedAt (8 bytes BE) ‖ id`
/// {ns}:m:{type}           hash id → the (set, member) pairs the record occupies, to remove them again
/// {ns}:e                  sorted set, score 0, members `expiresAt (8 bytes BE) ‖ {type} ‖ ":" ‖ id`
/// {ns}:lease:{type}:{id}  a load's lease or remembered nil (``SharedTierLease``), with a PX time to live
/// {ns}:seq                the change counter; {ns}:log its last changes (sorted set scored by sequence)
/// {ns}:epoch              when the counter's history began: the writer's clock (8 bytes) at sequence 1
/// {ns}:changes            the pub/sub channel of change notices
/// ```
/// `{ns}`, `{type}` and `{index}` are escaped (`%` → `%25`, `:` → `%3A`), so no two names, and no two
/// namespaces, ever share a key; the id is the key's unescaped tail.
struct SharedTierLayout: Sendable {
    /// The escaped namespace and a colon.
    let prefix: [UInt8]

    init(namespace: String) {
        prefix = SharedTierLayout.escape(namespace) + [UInt8(ascii: ":")]
    }

    /// A name with `%` and `:` percent-escaped.
    static func escape(_ name: String) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(name.utf8.count)
        for byte in name.utf8 {
            switch byte {
            case UInt8(ascii: "%"): out += Array("%25".utf8)
            case UInt8(ascii: ":"): out += Array("%3A".utf8)
            default: out.append(byte)
            }
        }
        return out
    }

    private func key(_ letter: String, _ parts: [UInt8]...) -> [UInt8] {
        var out = prefix + Array(letter.utf8)
        for part in parts { out += [UInt8(ascii: ":")] + part }
        return out
    }

    func record(type: [UInt8], id: [UInt8]) -> [UInt8] { key("r", type, id) }
    func index(type: [UInt8], name: String) -> [UInt8] { key("i", type, SharedTierLayout.escape(name)) }
    func ids(type: [UInt8]) -> [UInt8] { key("k", type) }
    func updated(type: [UInt8]) -> [UInt8] { key("u", type) }
    func members(type: [UInt8]) -> [UInt8] { key("m", type) }
    func lease(type: [UInt8], id: [UInt8]) -> [UInt8] { key("lease", type, id) }
    /// The mark that the load request under `token` was abandoned (``SharedTier/abandonLease(type:id:token:keepFor:)``):
    /// the token in hex before the id, so that no id can name another's mark.
    func abandonedLease(type: [UInt8], id: [UInt8], token: UInt64) -> [UInt8] {
        key("abandoned", type, Array(String(token, radix: 16).utf8), id)
    }
    var expiry: [UInt8] { key("e") }
    var sequence: [UInt8] { key("seq") }
    /// The history the sequence belongs to: set by the change that gets sequence 1, so a count that started
    /// anew (the server lost its data) is told apart from one that went on, whatever number it reached.
    var epoch: [UInt8] { key("epoch") }
    /// The namespace's key check value (an encrypted namespace's), written by its first instance with a key.
    var seal: [UInt8] { key("seal") }
    var log: [UInt8] { key("log") }
    var channel: [UInt8] { key("changes") }

    /// Length-prefixed (4 bytes big-endian) strings, the framing the scripts read back.
    static func frame(_ items: [[UInt8]]) -> [UInt8] {
        var out: [UInt8] = []
        for item in items {
            let count = UInt32(item.count)
            out += [UInt8(count >> 24), UInt8((count >> 16) & 0xFF), UInt8((count >> 8) & 0xFF), UInt8(count & 0xFF)]
            out += item
        }
        return out
    }
}
