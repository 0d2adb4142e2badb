import Foundation
@testable import MatchcastStore
import PostgresNIO
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
    /// `writeLinger`: how long its small writes wait for others of their kind (`PostgresWriteGroup`).
    static func withFreshStore(
        writeLinger: Duration? = nil, _ body: (PostgresStore) async throws -> Void
    ) async throws {
        var configuration = try freshConfiguration()
        if let writeLinger { configuration.writeLinger = writeLinger }
        try await withStore(configuration: configuration, dropAfterwards: true, body)
    }

    /// Runs `body` on a migrated store in a fresh schema to which a newer build has applied an expand migration this
    /// build does not know (`applyNewerExpandMigration`): what a replica of the older build sees during a rolling
    /// upgrade. Drops the schema afterwards.
    static func withFreshStoreBesideNewerSchema(_ body: (PostgresStore) async throws -> Void) async throws {
        let configuration = try freshConfiguration()
        try await withStore(configuration: configuration, dropAfterwards: false) { try await applyNewerExpandMigration($0) }
        try await withStore(configuration: configuration, dropAfterwards: true, body)
    }

    /// What a newer build's expand migration may add, recorded as that build records it (`readers` ''): a table of
    /// its own, and in every table of the schema a nullable column and a NOT NULL one with a default.
    static func applyNewerExpandMigration(_ store: PostgresStore) async throws {
        let logger = store.logger
        try await store.withConnection("applying a newer build's migration") { connection in
            let tables = try await connection.query(
                "SELECT tablename FROM pg_tables WHERE schemaname = current_schema() AND tablename <> 'schema_migrations'",
                logger: logger
            ).collect(String.self)
            for table in tables {
                try await connection.query(PostgresQuery(unsafeSQL: """
                    ALTER TABLE "\(table)" ADD COLUMN newer_note text, ADD COLUMN newer_flag boolean NOT NULL DEFAULT false
                    """), logger: logger).consume()
            }
            try await connection.query(
                "CREATE TABLE newer_thing (id bigserial PRIMARY KEY, device_id text REFERENCES device(id) ON DELETE CASCADE)",
                logger: logger
            ).consume()
            try await connection.query("INSERT INTO schema_migrations (name, readers) VALUES ('v900', '')", logger: logger).consume()
        }
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
