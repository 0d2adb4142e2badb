import Foundation
@testable import MatchcastStore
import Testing

/// The PostgreSQL server the tests use: `MATCHCAST_POSTGRES_URL` (`Scripts/postgres start` prints one; `.ci/run`
/// starts a throwaway server and sets it). Unset, the PostgreSQL tests are skipped.
enum PostgresTestServer {
    static let url: String? = {
        guard let value = ProcessInfo.processInfo.environment["MATCHCAST_POSTGRES_URL"], !value.isEmpty else { return nil }
        return value
    }()

    static var isConfigured: Bool { url != nil }

    static let skipMessage: Comment =
        "set MATCHCAST_POSTGRES_URL to run the PostgreSQL tests and the contract suite on PostgreSQL (Scripts/postgres start prints one)"

    /// The server's settings with a schema no other test uses.
    static func freshConfiguration() throws -> PostgresStore.Configuration {
        let url = try #require(url, "MATCHCAST_POSTGRES_URL is not set")
        var configuration = try #require(try StoreURL(url).postgresConfiguration, "MATCHCAST_POSTGRES_URL is not a postgres:// URL")
        configuration.schema = "t_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "")
        // A safety net on a loaded machine, never a measurement.
        configuration.leaseTimeout = .seconds(60)
        configuration.maximumConnections = 4
        // Hundreds of stores share the test server: their connections opened on demand, not four each at once.
        configuration.keepsConnectionsOpen = false
        return configuration
    }

    /// Runs `body` on a migrated store in a fresh schema, with its pool running; drops the schema afterwards.
    static func withFreshStore(_ body: (PostgresStore) async throws -> Void) async throws {
        try await withStore(configuration: try freshConfiguration(), dropAfterwards: true, body)
    }

    /// Runs `body` on a migrated store with its pool running.
    static func withStore(
        configuration: PostgresStore.Configuration, dropAfterwards: Bool, _ body: (PostgresStore) async throws -> Void
    ) async throws {
        let store = try await PostgresStore.open(configuration)
        do {
            try await withStoreRunning(store) { try await body(store) }
        } catch {
            if dropAfterwards { try? await store.dropSchema() }
            throw error
        }
        if dropAfterwards { try await store.dropSchema() }
    }
}
