/// A command line that cannot be used as given; reported with the command's usage, exit status 2.
struct UsageError: Error, CustomStringConvertible {
    let description: String

    init(_ description: String) {
        self.description = description
    }
}

/// What a command accepts besides the global `--store`, `--json` and `--help`.
struct ArgumentSpec {
    /// Options that take a value (`--limit 10` or `--limit=10`), without their dashes.
    var options: Set<String> = []
    /// Options that take no value, without their dashes.
    var flags: Set<String> = []
    /// How many positional arguments the command takes.
    var positionals: ClosedRange<Int> = 0...0
}

/// A command line split into positional arguments, options with values, and flags.
struct ParsedArguments {
    var positionals: [String] = []
    /// Each option's values, in order (an option may repeat).
    var options: [String: [String]] = [:]
    var flags: Set<String> = []

    /// The last value given for `name`, if any.
    func value(_ name: String) -> String? { options[name]?.last }

    /// Whether the flag `name` was given.
    func has(_ name: String) -> Bool { flags.contains(name) }

    /// The value of `name` as a count (an integer ≥ 0), or nil when it was not given.
    func count(_ name: String) throws(UsageError) -> Int? {
        guard let text = value(name) else { return nil }
        guard let number = Int(text), number >= 0 else {
            throw UsageError("--\(name) needs a whole number ≥ 0, not \"\(text)\"")
        }
        return number
    }
}

/// The hand-written argument parser: `--name value`, `--name=value`, flags, positionals, and `--` to end options.
enum ArgumentParser {
    /// Options every command accepts.
    static let globalOptions: Set<String> = ["store", "key-file", "previous-key-file"]
    /// Flags every command accepts.
    static let globalFlags: Set<String> = ["json", "help"]

    /// Splits `arguments` (the words after the command name) according to `spec`.
    static func parse(_ arguments: [String], spec: ArgumentSpec) throws(UsageError) -> ParsedArguments {
        var parsed = ParsedArguments()
        let options = spec.options.union(globalOptions)
        let flags = spec.flags.union(globalFlags)
        var index = 0
        var optionsEnded = false
        while index < arguments.count {
            let word = arguments[index]
            index += 1
            if optionsEnded || !word.hasPrefix("-") || word == "-" {
                parsed.positionals.append(word)
                continue
            }
            if word == "--" {
                optionsEnded = true
                continue
            }
            if word == "-h" {
                parsed.flags.insert("help")
                continue
            }
            guard word.hasPrefix("--") else {
                throw UsageError("unknown option \(word) (an argument that begins with - goes after --: -- \(word))")
            }
            let body = word.dropFirst(2)
            let name = String(body.prefix { $0 != "=" })
            let inlineValue = body.contains("=") ? String(body.drop { $0 != "=" }.dropFirst()) : nil
            if options.contains(name) {
                let value: String
                if let inlineValue {
                    value = inlineValue
                } else {
                    guard index < arguments.count else { throw UsageError("--\(name) needs a value") }
                    value = arguments[index]
                    // `--limit --store D`: the value was left out, and the next option is not it.
                    let next = value.hasPrefix("--") ? String(value.dropFirst(2).prefix { $0 != "=" }) : nil
                    if let next, options.contains(next) || flags.contains(next) {
                        throw UsageError("--\(name) needs a value (it is followed by --\(next))")
                    }
                    index += 1
                }
                parsed.options[name, default: []].append(value)
            } else if flags.contains(name) {
                guard inlineValue == nil else { throw UsageError("--\(name) takes no value") }
                parsed.flags.insert(name)
            } else {
                throw UsageError("unknown option --\(name)")
            }
        }
        if parsed.has("help") { return parsed }
        let count = parsed.positionals.count
        if count < spec.positionals.lowerBound {
            throw UsageError("missing arguments")
        }
        if count > spec.positionals.upperBound {
            throw UsageError("unexpected argument \"\(parsed.positionals[spec.positionals.upperBound])\"")
        }
        return parsed
    }
}
