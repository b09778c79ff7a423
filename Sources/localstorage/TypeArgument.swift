import Foundation
@_spi(Maintenance) import LocalStorageKit

/// The TYPE argument: a stored type's name as given or, when the store has no type of that name and the
/// argument is a quoted JSON string, the name it spells. `types`, `stats` and `list` show a name that holds
/// a control or invisible character that way (``displayed(_:)``), and a name holding `0x00` cannot be
/// given otherwise: a command line cannot carry that byte.
enum TypeArgument {
    /// The lines `--help` prints about it.
    static let help = """
        TYPE is taken as given; a name with control characters is named the way types shows it,
        as a quoted JSON string ("a\\u0000b").
        """

    /// The stored type `text` names.
    static func name(_ text: String, in store: StoreMaintenance) -> String {
        name(text, among: Set(store.types().map(\.name)).union(store.unreadableTypeNames))
    }

    /// The name among `known` that `text` names: `text` itself, or the name it spells as a quoted JSON string
    /// when no known name is `text` (types and index names alike).
    static func name(_ text: String, among known: Set<String>) -> String {
        guard !known.contains(text), text.count >= 2, text.hasPrefix("\""), text.hasSuffix("\"") else { return text }
        do {
            let spelled = try JSONDecoder().decode(String.self, from: Data(text.utf8))
            return known.contains(spelled) ? spelled : text
        } catch {
            // Not a JSON string: the name as given, which the store reports it does not have.
            return text
        }
    }

    /// `name` for a line of text output (``IdentifierArgument/displayed(_:)``).
    static func displayed(_ name: String) -> String { IdentifierArgument.displayed(name) }
}
