@testable import LocalStorageKit

/// Two types whose names differ only in Unicode normalization ("café" composed and decomposed).
struct ComposedName: LocalStorable, Equatable {
    let id: String
    var text: String
    static var storageName: String { "caf\u{E9}" }
}

struct DecomposedName: LocalStorable, Equatable {
    let id: String
    var text: String
    static var storageName: String { "cafe\u{301}" }
}
