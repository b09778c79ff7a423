@_spi(Maintenance) import LocalStorageKit

/// `types`: the stored types with their index declarations and schema versions.
enum TypesCommand: Command {
    static let name = "types"
    static let synopsis = "types"
    static let summary = "Stored types with their index declarations and schema versions."
    static let details = ""
    static let spec = ArgumentSpec()
    static let onlyReads = true

    static func run(_ arguments: ParsedArguments, store: StoreMaintenance, output: Output) async throws -> Int32 {
        let types = store.types()
        for name in store.unreadableTypeNames {
            output.message(
                "localstorage: warning: the description of type \(TypeArgument.displayed(name)) cannot be read")
        }
        if output.isJSON {
            try output.json(types)
            return 0
        }
        if types.isEmpty { output.line("(no types)") }
        for type in types {
            output.line(
                "\(TypeArgument.displayed(type.name))  version \(type.version)  signature \(String(type.signature, radix: 16))"
            )
            for index in type.indexes {
                output.line("  \(TypeArgument.displayed(index.name))  \(index.kind)")
            }
            for declaration in type.otherDeclarations {
                let indexes = declaration.indexes.map { "\(TypeArgument.displayed($0.name)) \($0.kind)" }
                output.line(
                    "  another declaration, signature \(String(declaration.signature, radix: 16)): "
                        + (indexes.isEmpty ? "no indexes" : indexes.joined(separator: ", ")))
            }
        }
        return 0
    }
}
