/// A closure its caller gave up (a `sending` parameter: `write { }`'s body), run on the store's writer thread
/// while the caller waits for it. Nothing else holds it, and it never runs on two threads at once, so it may
/// capture what a `@Sendable` closure may not (a local `var` the caller does not use again).
struct SentClosure<Argument, Result>: @unchecked Sendable {
    let run: (Argument) throws -> Result

    init(_ run: sending @escaping (Argument) throws -> Result) { self.run = run }
}

/// ``SentClosure`` for `update`'s `mutate`, which takes its value `inout`.
struct SentMutation<Value>: @unchecked Sendable {
    let run: (inout Value) throws -> Void

    init(_ run: sending @escaping (inout Value) throws -> Void) { self.run = run }
}
