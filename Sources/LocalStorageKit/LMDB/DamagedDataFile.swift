/// The data file's pages are damaged where every write needs them (the free-page database, the main
/// database or the root of a database it names): opening fails rather than a later write or a crash.
struct DamagedDataFile: Error, CustomStringConvertible {
    /// What the walk found first.
    let problem: String

    var description: String {
        "\(problem). The store cannot be used: `localstorage verify --repair` salvages the records that can "
            + "still be read, or remove the store (LocalStorage.removeStore(at:)) and let the cache fill again"
    }
}
