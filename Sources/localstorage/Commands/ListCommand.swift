@_spi(Maintenance) import LocalStorageKit

/// `list TYPE`: ids with metadata, filtered and ordered by the type's indexes.
enum ListCommand: Command {
    static let name = "list"
    static let synopsis = "list TYPE [--limit N] [--offset N] [--where INDEX=VALUE]… [--order INDEX|-INDEX]"
    static let summary = "Ids of a type's records with their metadata, using the store's indexes."
    static let details = """
        Arguments:
          TYPE                 the type's storage name (see `localstorage types`); one holding
                               control characters as types shows it, a quoted JSON string
          --limit N            at most N records (default: all)
          --offset N           skip the first N records
          --where INDEX=VALUE  only records whose INDEX equals VALUE; repeat to AND conditions.
                               A number VALUE is an integer, a decimal, true/false, or Infinity /
                               -Infinity (also inf, -inf); NaN is never indexed
          --order INDEX        order by INDEX, ascending; -INDEX for descending. Records with no
                               value for INDEX come first ascending and last descending; ties by id
        An INDEX holding control characters is named as types shows it, a quoted JSON string:
        --where '"x\\u0000"=5', --order '-"x\\u0000"'.
        Records are listed by id otherwise. Expired records are listed too, marked expired.
        A listing by an index that records indexed under another declaration are not in yet
        fails (exit 1) until the app re-indexes them (its first indexed query of the type does).
        Ids holding control characters (such as 0x00) are shown as quoted JSON strings; name them
        with get/delete --escaped.
        """
    static let spec = ArgumentSpec(options: ["limit", "offset", "where", "order"], positionals: 1...1)
    static let onlyReads = true

    static func validate(_ arguments: ParsedArguments) throws(UsageError) {
        _ = try query(arguments)
    }

    static func query(_ arguments: ParsedArguments) throws(UsageError) -> ListQuery {
        var query = ListQuery(limit: try arguments.count("limit"), offset: try arguments.count("offset") ?? 0)
        for condition in arguments.options["where"] ?? [] {
            guard let (index, value) = split(condition) else {
                throw UsageError("--where needs INDEX=VALUE, not \"\(condition)\"")
            }
            query.conditions.append(ListQuery.Condition(index: index, value: value))
        }
        if let order = arguments.value("order") {
            let isDescending = order.hasPrefix("-")
            let index = isDescending ? String(order.dropFirst()) : order
            guard !index.isEmpty else { throw UsageError("--order needs an index name") }
            query.order = ListQuery.Order(index: index, isDescending: isDescending)
        }
        return query
    }

    /// INDEX and VALUE of `--where INDEX=VALUE`, split at the first `=` after INDEX; an INDEX given as a quoted
    /// JSON string (an index name with control characters, as `types` shows it) may hold `=` itself.
    static func split(_ condition: String) -> (index: String, value: String)? {
        let bytes = Array(condition.utf8)
        if let end = JSONText.leadingStringLength(bytes), end < bytes.count, bytes[end] == UInt8(ascii: "=") {
            return (
                String(decoding: bytes[..<end], as: UTF8.self), String(decoding: bytes[(end + 1)...], as: UTF8.self)
            )
        }
        guard let equals = condition.firstIndex(of: "="), equals != condition.startIndex else { return nil }
        return (String(condition[..<equals]), String(condition[condition.index(after: equals)...]))
    }

    static func run(_ arguments: ParsedArguments, store: StoreMaintenance, output: Output) async throws -> Int32 {
        let type = TypeArgument.name(arguments.positionals[0], in: store)
        // Index names as given, or as quoted JSON strings spelling them (a name holding 0x00 needs that).
        // Every declaration's: an app and its extension may index the type differently.
        let described = store.types().first { $0.name == type }
        let indexes = Set(
            ((described?.indexes ?? []) + (described?.otherDeclarations.flatMap(\.indexes) ?? [])).map(\.name))
        var query = try query(arguments)
        for position in query.conditions.indices {
            let given = query.conditions[position].index
            // `--where 'price>=5'` splits as the index `price>` and the value `5`: say what is wrong with it.
            if !indexes.contains(given), let last = given.last, "<>!".contains(last),
                indexes.contains(String(given.dropLast()))
            {
                throw UsageError(
                    "--where compares for equality only (INDEX=VALUE): \"\(given)=\(query.conditions[position].value)\" "
                        + "names the index \"\(given)\", which \(type) does not have")
            }
            query.conditions[position].index = TypeArgument.name(given, among: indexes)
        }
        if let order = query.order { query.order?.index = TypeArgument.name(order.index, among: indexes) }
        let listing = try store.list(type, query: query)
        if output.isJSON {
            try output.json(listing)
            return 0
        }
        for record in listing.records {
            // One line per record: a line break in an index value is escaped like any control character.
            output.line(InvisibleCharacters.escaped(describe(record), keeping: []))
        }
        for problem in listing.damaged {
            output.line(
                InvisibleCharacters.escaped(
                    "\(problem.id.map(IdentifierArgument.displayed) ?? "?")  "
                        + (problem.kind == .newerRecord ? "NEWER" : "DAMAGED") + ": \(problem.detail)", keeping: []))
        }
        if listing.records.isEmpty && listing.damaged.isEmpty { output.line("(no records)") }
        return 0
    }

    /// One record on one line: id, times, version, format, size, index values.
    static func describe(_ record: RecordSummary) -> String {
        var parts = [IdentifierArgument.displayed(record.id), "updated " + Output.date(record.updatedAt)]
        parts.append(record.expiresAt.map { "expires " + Output.date($0) } ?? "never expires")
        if record.isExpired == true { parts.append("EXPIRED") }
        parts.append("v\(record.version) \(record.format) \(Output.bytes(record.sizeInBytes ?? 0))")
        parts += record.indexes.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }
        return parts.joined(separator: "  ")
    }
}
