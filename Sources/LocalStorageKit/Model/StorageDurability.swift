/// How durable each commit is.
public enum StorageDurability: Sendable, Hashable {
    /// Every commit is flushed to disk before the save returns (the default).
    case full
    /// The data is flushed on commit, the meta page lazily (`MDB_NOMETASYNC`): a system crash may lose
    /// the last commits, never consistency.
    case relaxed
    /// Nothing is flushed (`MDB_NOSYNC`): for throwaway caches. A system crash may lose recent commits;
    /// a process crash loses nothing.
    case none
}
