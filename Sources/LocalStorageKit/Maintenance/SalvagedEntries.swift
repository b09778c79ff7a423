import Foundation

/// What a salvage read from the snapshot of one meta page.
struct SalvagedSnapshot {
    let meta: MetaPage
    let problems: [DataFileWalk.Problem]
    let lines: [Data]
    let lost: [VerifyProblem]
    let records: Int
    /// Types whose description is well-formed JSON this version cannot read (a newer version's).
    let newer: [String]
    let counted: Int?
    let encrypted: Bool
    /// The store's layout marker, when its `meta` held a readable one.
    let layout: Int?
}

/// The entries a salvage walk reached: the `meta` database and every records database.
final class SalvagedEntries {
    private(set) var metaEntries: [(key: [UInt8], value: [UInt8])] = []
    private var records: [String: [(key: [UInt8], value: [UInt8])]] = [:]

    /// Whether any record collected is sealed (its header's format byte says so), whether or not it can be opened.
    var holdsSealed: Bool {
        records.values.contains { entries in
            entries.contains { $0.value.count > 1 && $0.value[1] & PayloadEnvelope.sealed.rawValue != 0 }
        }
    }

    /// Forgets what was collected under `names` (names the main database holds twice).
    func drop(_ names: Set<String>) {
        for name in names { records[name] = nil }
        if names.contains(TypeRegistry.metaName) { metaEntries = [] }
    }

    func add(_ database: String, _ key: [UInt8], _ value: [UInt8]) {
        if database == TypeRegistry.metaName {
            metaEntries.append((key, value))
        } else {
            records[database, default: []].append((key, value))
        }
    }

    /// Export lines of every readable type and its readable records; what could not be read; the number
    /// of record lines; the types whose description is well-formed JSON this version cannot read (a newer
    /// version's). Payloads are opened with `sealing`.
    func exportLines(sealing: PayloadSealing) -> (lines: [Data], lost: [VerifyProblem], records: Int, newer: [String]) {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        var lines: [Data] = []
        var lost: [VerifyProblem] = []
        var count = 0
        var newer: [String] = []
        for entry in metaEntries where entry.key.starts(with: TypeInfo.keyPrefix) {
            let name = String(decoding: entry.key.dropFirst(TypeInfo.keyPrefix.count), as: UTF8.self)
            let info: TypeInfo
            do {
                info = try entry.value.withUnsafeBytes { try TypeRegistry.decodeDescription($0) }
                lines.append(try encoder.encode(TypeDescription(info)))
            } catch {
                // Its records cannot be told apart from another type's without its description.
                let detail =
                    "its description in meta cannot be read: \(TypeRegistry.undecodable(error)); none of its "
                    + "records could be salvaged"
                lost.append(VerifyProblem(type: name, id: nil, kind: .unreadableType, detail: detail))
                if SalvagedEntries.isWellFormed(entry.value) { newer.append(name) }
                continue
            }
            for record in records["r.\(info.number)"] ?? [] {
                let id = String(decoding: record.key, as: UTF8.self)
                do {
                    let detail = try record.value.withUnsafeBytes {
                        try StoreMaintenance.detail(
                            type: name, id: id, bytes: $0, now: nil, sealing: sealing, info: info)
                    }
                    lines.append(try detail.jsonLine())
                    count += 1
                } catch {
                    let kind = record.value.withUnsafeBytes {
                        StoreMaintenance.problemKind(of: $0, type: name, id: id, sealing: sealing)
                    }
                    let detail = kind == .sealNotOpened ? StoreMaintenance.sealNotOpenedDetail : "\(error)"
                    lost.append(VerifyProblem(type: name, id: id, kind: kind, detail: detail))
                }
            }
        }
        return (lines, lost, count, newer)
    }

    /// Whether a type description that does not decode is well-formed JSON (an object): most likely a newer
    /// version's (an index kind this one does not know) rather than damage.
    static func isWellFormed(_ description: [UInt8]) -> Bool {
        do {
            return try JSONSerialization.jsonObject(with: Data(description)) is [String: Any]
        } catch {
            return false  // not JSON: damaged
        }
    }
}
