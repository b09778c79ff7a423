import Foundation
import Synchronization

/// Checks a type's migration steps once, when the type is first used: duplicates and gaps are reported
/// through the logger (and fail on use with `migrationFailed`).
enum MigrationValidator {
    static func problems(steps: [StorageMigration], current: Int) -> [String] {
        var problems: [String] = []
        let starts = Dictionary(grouping: steps, by: \.from)
        for (from, group) in starts where group.count > 1 {
            problems.append("\(group.count) steps start at version \(from)")
        }
        for step in steps where step.to <= step.from || step.to > current {
            problems.append("step \(step.from) → \(step.to) does not move towards version \(current)")
        }
        if let lowest = steps.map(\.from).min() {
            var version = lowest
            while version < current {
                guard let step = starts[version]?.first, step.to > version else {
                    problems.append("no step from version \(version)")
                    break
                }
                version = step.to
            }
        }
        return problems
    }
}
