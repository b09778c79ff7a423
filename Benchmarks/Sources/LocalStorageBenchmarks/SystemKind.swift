/// The systems compared.
enum SystemKind: String, CaseIterable, Sendable {
    case localStorageKit = "lsk"
    case rawLMDB = "lmdb"
    case sqlite = "sqlite"
}
