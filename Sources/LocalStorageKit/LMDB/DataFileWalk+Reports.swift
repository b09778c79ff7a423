/// What a ``DataFileWalk`` reports: the problems it found and the pages it counted.
extension DataFileWalk {
    /// One thing found wrong, where it was found.
    struct Problem: Equatable, CustomStringConvertible {
        /// The database (`free pages`, `main`, or a named database such as `r.3`).
        var database: String
        /// The page, when there is one.
        var page: UInt64?
        var detail: String

        /// Whether it is a database's entry or page counts disagreeing with its tree (which differ between two
        /// commits that share a damaged page).
        var isCountClaim: Bool { page == nil && detail.hasPrefix("it claims ") }

        var description: String {
            "the file is damaged at " + (page.map { "page \($0) of " } ?? "") + "database \(database): \(detail)"
        }
    }

    /// The pages of one database by kind.
    struct PageTotals: Equatable {
        var branch: UInt64 = 0
        var leaf: UInt64 = 0
        var overflow: UInt64 = 0

        /// Adds counts, saturating: a damaged file's claims make a total wrong (and reported), never a trap.
        mutating func add(branch: UInt64, leaf: UInt64, overflow: UInt64) {
            self.branch = self.branch.adding(saturating: branch)
            self.leaf = self.leaf.adding(saturating: leaf)
            self.overflow = self.overflow.adding(saturating: overflow)
        }
    }
}
