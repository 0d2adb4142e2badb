import Foundation
import Logging
import MatchcastStore
import NIOSSL
import PostgresNIO
import Testing

/// A PostgreSQL database of its own for a test that runs whole `matchcast serve` processes: created on the server
/// `MATCHCAST_POSTGRES_URL` names (`Scripts/postgres start` prints one; `.ci/run` sets it) under a unique name, and
/// dropped afterwards, so the brokers never see another test's rows. Unset, such tests are skipped.
struct ScratchPostgresDatabase: Sendable {
    static let serverURL: String? = {
        guard let value = ProcessInfo.processInfo.environment["MATCHCAST_POSTGRES_URL"], !value.isEmpty else { return nil }
        return value
    }()

    static var isConfigured: Bool { serverURL != nil }

    static let skipMessage: Comment =
        "set MATCHCAST_POSTGRES_URL to run the multi-replica tests on PostgreSQL (Scripts/postgres start prints one)"

    let name: String
    /// The store URL the brokers get: the server's URL with this database in its path.
    let url: String
    private let server: PostgresStore.Configuration

    /// Creates a database no other test uses.
    static func create() async throws -> ScratchPostgresDatabase {
        let serverURL = try #require(serverURL, "MATCHCAST_POSTGRES_URL is not set")
        let server = try #require(
            try StoreURL(serverURL).postgresConfiguration, "MATCHCAST_POSTGRES_URL is not a postgres:// URL")
        let name = "matchcast_replicas_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "")
        var components = try #require(URLComponents(string: serverURL))
        components.path = "/" + name
        let url = try #require(components.string)
        let database = ScratchPostgresDatabase(name: name, url: url, server: server)
        // A name of our own making (letters, digits, underscores): safe to splice, as DDL takes no bind parameters.
        try await database.execute("CREATE DATABASE \"\(name)\"")
        return database
    }

    /// Drops the database, closing whatever connections a killed broker left behind.
    func drop() async throws {
        try await execute("DROP DATABASE IF EXISTS \"\(name)\" WITH (FORCE)")
    }

    /// Runs one statement on a connection of its own to the server's own database.
    private func execute(_ statement: String) async throws {
        let logger = Logger(label: "matchcast.test.scratch-database", factory: { _ in SwiftLogNoOpLogHandler() })
        var configuration = PostgresConnection.Configuration(
            host: server.host, port: server.port, username: server.username, password: server.password,
            database: server.database, tls: try Self.tls(server.tls))
        configuration.options.connectTimeout = .seconds(30)
        let connection = try await PostgresConnection.connect(configuration: configuration, id: 1, logger: logger)
        do {
            _ = try await connection.query(PostgresQuery(unsafeSQL: statement), logger: logger).collect()
        } catch {
            try? await connection.close()
            throw error
        }
        try await connection.close()
    }

    private static func tls(_ mode: PostgresStore.Configuration.TLSMode) throws -> PostgresConnection.Configuration.TLS {
        switch mode {
        case .disable:
            return .disable
        case .prefer, .require:
            var unverified = TLSConfiguration.makeClientConfiguration()
            unverified.certificateVerification = .none
            let context = try NIOSSLContext(configuration: unverified)
            return mode == .prefer ? .prefer(context) : .require(context)
        case .verifyFull:
            return .require(try NIOSSLContext(configuration: .makeClientConfiguration()))
        }
    }
}
