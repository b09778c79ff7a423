import Foundation
import Testing

@testable import LocalStorageKit

/// Settings that cannot work are refused when the store opens, before anything connects.
@Suite struct SharedTierConfigurationTests {
    static func configuration(_ change: (inout SharedTierConfiguration) -> Void = { _ in }) -> SharedTierConfiguration {
        var configuration = SharedTierConfiguration(
            url: URL(string: "redis://127.0.0.1:6379/0")!, namespace: "shop")
        change(&configuration)
        return configuration
    }

    @Test func workableSettingsGiveAnEndpoint() throws {
        let endpoint = try Self.configuration {
            $0.password = "secret"
            $0.username = "app"
        }.endpoint()
        #expect(endpoint.label == "127.0.0.1:6379/0")
        #expect(endpoint.username == "app")
    }

    /// An IPv6 address is printed in brackets, as a URL writes it (`::1:6379` read as a longer address).
    @Test func anIPv6HostIsLabelledInBrackets() throws {
        let endpoint = try Self.configuration { $0.url = URL(string: "redis://[::1]:6380/2")! }.endpoint()
        #expect(endpoint.host == "::1")
        #expect(endpoint.label == "[::1]:6380/2")
    }

    /// Measured durations in messages (time since the server was heard from, until the next attempt) print to the
    /// millisecond, not to the nanosecond.
    @Test func measuredDurationsAreRoundedToTheMillisecond() {
        let measured = Duration.seconds(1) + .nanoseconds(499_778_157)
        #expect("\(measured.roundedToMilliseconds)" == "1.5 seconds")
        #expect(Duration.nanoseconds(999_600_000).roundedToMilliseconds == .seconds(1))
        #expect(Duration.nanoseconds(-1_250_400_000).roundedToMilliseconds == .milliseconds(-1_250))
    }

    /// `URLComponents` decodes the URL's user and password once; a second decode turned `%41` into `A`.
    @Test func theURLsCredentialsAreDecodedOnce() throws {
        let endpoint = try Self.configuration {
            $0.url = URL(string: "redis://us%25er:ab%2541%20c@127.0.0.1:6379/0")!
        }.endpoint()
        #expect(endpoint.username == "us%er")
        #expect(endpoint.password == "ab%41 c")
    }

    static let unworkable: [(String, @Sendable (inout SharedTierConfiguration) -> Void)] = [
        ("a user name without a password", { $0.username = "app" }),
        ("no reconnect delay", { $0.reconnectDelay = .zero }),
        ("a negative maximum reconnect delay", { $0.maxReconnectDelay = .milliseconds(-1) }),
        ("no staleness allowed", { $0.maxStaleness = .zero }),
        ("no read timeout", { $0.readTimeout = .zero }),
        ("no connect timeout", { $0.connectTimeout = .zero }),
        ("a change log of no changes", { $0.changeLogRetention = 0 }),
        ("an empty namespace", { $0.namespace = "" }),
        ("a TLS URL", { $0.url = URL(string: "rediss://127.0.0.1:6379")! }),
    ]

    @Test(arguments: unworkable.indices)
    func unworkableSettingsAreRefused(_ index: Int) {
        let (what, change) = Self.unworkable[index]
        #expect(throws: LocalStorageError.self, "\(what)") { try Self.configuration(change).endpoint() }
    }

    /// A URL of another scheme names the two the tier takes; TLS is mentioned for a TLS scheme only (trial91 #5: an
    /// `http://` URL was refused "(TLS is not supported)").
    @Test(arguments: [("rediss", true), ("valkeys", true), ("http", false), ("unix", false)])
    func anotherSchemeIsRefusedSayingWhichItTakes(scheme: String, tls: Bool) throws {
        let error = #expect(throws: LocalStorageError.self) {
            try Self.configuration { $0.url = URL(string: "\(scheme)://127.0.0.1:6379")! }.endpoint()
        }
        let message = try #require(error).localizedDescription
        #expect(message.contains("must start with redis:// or valkey://"), "\(message)")
        #expect(message.contains("TLS") == tls, "\(message)")
    }
}
