/// One step of a coding path, linked to its parent so that nested values share their prefix.
///
/// The codec builds a node only when it hands a nested value to user code; the full
/// `[any CodingKey]` array is assembled only when someone asks for it (for an error or `codingPath`).
final class BinaryCodingPath {
    /// The path of the enclosing container, or `nil` at the top level.
    let parent: BinaryCodingPath?
    /// The last key of this path.
    let key: any CodingKey
    /// The number of keys in this path.
    let depth: Int

    /// Creates the path `parent + [key]`.
    init(parent: BinaryCodingPath?, key: any CodingKey) {
        self.parent = parent
        self.key = key
        self.depth = (parent?.depth ?? 0) + 1
    }

    /// Returns `parent + [key]`, or `parent` itself when there is no key.
    static func appending(_ key: (any CodingKey)?, to parent: BinaryCodingPath?) -> BinaryCodingPath? {
        guard let key else { return parent }
        return BinaryCodingPath(parent: parent, key: key)
    }

    /// Returns the keys of `path` from the top level down, or an empty array for `nil`.
    static func keys(_ path: BinaryCodingPath?) -> [any CodingKey] {
        guard let path else { return [] }
        var keys = [any CodingKey]()
        keys.reserveCapacity(path.depth)
        var node: BinaryCodingPath? = path
        while let current = node {
            keys.append(current.key)
            node = current.parent
        }
        keys.reverse()
        return keys
    }

    /// Returns the keys of `path` followed by `key`, if there is one.
    static func keys(_ path: BinaryCodingPath?, appending key: (any CodingKey)?) -> [any CodingKey] {
        var keys = keys(path)
        if let key {
            keys.append(key)
        }
        return keys
    }

    /// Returns the depth of `path`, 0 for the top level.
    static func depth(of path: BinaryCodingPath?) -> Int {
        path?.depth ?? 0
    }
}
