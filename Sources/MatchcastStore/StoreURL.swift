import Foundation

/// Where the broker keeps its state, as configured (`--store`, `store:` in the config file):
///
/// - `sqlite:PATH` (also `sqlite://PATH`): a SQLite file, created with its directories if missing;
/// - `sqlite::memory:`: a SQLite database in memory;
/// - `memory`: `InMemoryStore`, no SQL at all;
/// - `postgres://USER[:PASSWORD]@HOST[:PORT][/DATABASE][?sslmode=disable|prefer|require|verify-full&connect_timeout=SECONDS]`
///   (also `postgresql://`): a PostgreSQL database, shared by several brokers. The password is never printed.
public struct StoreURL: Sendable, Hashable, CustomStringConvertible {
    private enum Kind: Sendable, Hashable {
        case memory
        case sqliteMemory
        case sqliteFile(path: String)
        case postgres(PostgresStore.Configuration)

        static func == (lhs: Kind, rhs: Kind) -> Bool {
            switch (lhs, rhs) {
            case (.memory, .memory), (.sqliteMemory, .sqliteMemory): true
            case (.sqliteFile(let a), .sqliteFile(let b)): a == b
            case (.postgres(let a), .postgres(let b)): a.identity == b.identity
            default: false
            }
        }

        func hash(into hasher: inout Hasher) {
            switch self {
            case .memory: hasher.combine(0)
            case .sqliteMemory: hasher.combine(1)
            case .sqliteFile(let path): hasher.combine(path)
            case .postgres(let configuration): hasher.combine(configuration.identity)
            }
        }
    }

    private let kind: Kind

    /// Parses a store URL; `.configuration` naming the value when it is not one.
    public init(_ text: String) throws(StoreError) {
        let value = text.trimmingCharacters(in: .whitespaces)
        if value == "memory" {
            kind = .memory
        } else if value == "sqlite::memory:" {
            kind = .sqliteMemory
        } else if value.hasPrefix("sqlite:") {
            var path = String(value.dropFirst("sqlite:".count))
            if path.hasPrefix("//") { path.removeFirst(2) }
            guard !path.isEmpty else {
                throw .configuration("store URL '\(value)' has no path; use sqlite:PATH, sqlite::memory: or memory")
            }
            kind = .sqliteFile(path: path)
        } else if value.hasPrefix("postgres:") || value.hasPrefix("postgresql:") {
            kind = .postgres(try Self.postgres(value))
        } else {
            throw .configuration(
                "unknown store URL '\(Self.redacted(value))'; use sqlite:PATH, sqlite::memory:, memory or postgres://USER@HOST/DB")
        }
    }

    /// The SQLite file, when the store is one.
    public var sqlitePath: String? {
        if case .sqliteFile(let path) = kind { path } else { nil }
    }

    public var description: String {
        switch kind {
        case .memory: "memory"
        case .sqliteMemory: "sqlite::memory:"
        case .sqliteFile(let path): "sqlite:\(path)"
        case .postgres(let configuration): Self.describe(configuration)
        }
    }

    /// The PostgreSQL settings, when the store is one.
    public var postgresConfiguration: PostgresStore.Configuration? {
        if case .postgres(let configuration) = kind { configuration } else { nil }
    }

    /// Opens the store, migrating a SQLite or PostgreSQL database to the current schema. A `PostgresStore`'s
    /// `client` must then run (a `Service`) for as long as the store is used.
    public func makeStore() async throws(StoreError) -> any MatchcastStore {
        switch kind {
        // Nothing in memory outlives the process, so an outbox there would never be read back: the relay holds what
        // is not yet sent (`MatchcastStore.keepsOutbox`).
        case .memory: InMemoryStore(keepsOutbox: false)
        case .sqliteMemory: try SQLiteStore.inMemory()
        case .sqliteFile(let path): try SQLiteStore(path: path)
        case .postgres(let configuration): try await PostgresStore.open(configuration)
        }
    }

    // MARK: PostgreSQL

    private static let postgresUsage =
        "use postgres://USER[:PASSWORD]@HOST[:PORT][/DATABASE][?sslmode=...&connect_timeout=SECONDS&pool_size=N&keepalive=SECONDS]"

    private static func postgres(_ value: String) throws(StoreError) -> PostgresStore.Configuration {
        let shown = redacted(value)
        guard let components = URLComponents(string: value), components.scheme == "postgres" || components.scheme == "postgresql"
        else { throw .configuration("store URL '\(shown)' is not a valid URL; \(postgresUsage)") }
        guard let host = components.host, !host.isEmpty else {
            throw .configuration("store URL '\(shown)' has no host; \(postgresUsage)")
        }
        guard let user = components.user, !user.isEmpty else {
            throw .configuration("store URL '\(shown)' has no user; \(postgresUsage)")
        }
        var port = 5432
        if let given = components.port {
            guard (1...65535).contains(given) else { throw .configuration("store URL '\(shown)': port \(given) is out of range") }
            port = given
        }
        var database: String?
        let path = components.path
        if !path.isEmpty && path != "/" {
            let name = String(path.dropFirst())
            guard !name.contains("/") else {
                throw .configuration("store URL '\(shown)': '\(name)' is not a database name; \(postgresUsage)")
            }
            database = name
        }
        var configuration = PostgresStore.Configuration(
            host: host.hasPrefix("[") ? String(host.dropFirst().dropLast()) : host, port: port, username: user,
            password: components.password, database: database)
        for item in components.queryItems ?? [] {
            let itemValue = item.value ?? ""
            switch item.name {
            case "sslmode":
                guard let mode = PostgresStore.Configuration.TLSMode(rawValue: itemValue) else {
                    let modes = PostgresStore.Configuration.TLSMode.allCases.map(\.rawValue).joined(separator: ", ")
                    throw .configuration("store URL '\(shown)': sslmode '\(itemValue)' is not one of \(modes)")
                }
                configuration.tls = mode
            case "connect_timeout":
                guard let seconds = Int(itemValue), seconds > 0, seconds <= 3600 else {
                    throw .configuration("store URL '\(shown)': connect_timeout '\(itemValue)' is not a whole number of seconds (1 to 3600)")
                }
                configuration.connectTimeout = .seconds(seconds)
            case "pool_size":
                guard let size = Int(itemValue), (1...1000).contains(size) else {
                    throw .configuration("store URL '\(shown)': pool_size '\(itemValue)' is not a number of connections (1 to 1000)")
                }
                configuration.maximumConnections = size
            case "keepalive":
                guard let seconds = Int(itemValue), (0...3600).contains(seconds) else {
                    throw .configuration("store URL '\(shown)': keepalive '\(itemValue)' is not a whole number of seconds (0: off, up to 3600)")
                }
                configuration.keepAlive = seconds == 0 ? nil : .seconds(seconds)
            default:
                throw .configuration(
                    "store URL '\(shown)': unknown parameter '\(item.name)'; known: sslmode, connect_timeout, pool_size, keepalive")
            }
        }
        return configuration
    }

    /// The canonical form, with `***` for a password.
    private static func describe(_ configuration: PostgresStore.Configuration) -> String {
        let host = configuration.host.contains(":") ? "[\(configuration.host)]" : configuration.host
        var text = "postgres://\(configuration.username)\(configuration.password == nil ? "" : ":***")@\(host):\(configuration.port)"
        if let database = configuration.database { text += "/\(database)" }
        var parameters: [String] = []
        if configuration.tls != .prefer { parameters.append("sslmode=\(configuration.tls.rawValue)") }
        if configuration.connectTimeout != .seconds(10) {
            parameters.append("connect_timeout=\(configuration.connectTimeout.components.seconds)")
        }
        if configuration.maximumConnections != PostgresStore.Configuration.defaultMaximumConnections { parameters.append("pool_size=\(configuration.maximumConnections)") }
        if let keepAlive = configuration.keepAlive { parameters.append("keepalive=\(keepAlive.components.seconds)") }
        if !parameters.isEmpty { text += "?" + parameters.joined(separator: "&") }
        return text
    }

    /// The value without a password (`scheme://user:secret@host` → `scheme://user:***@host`), for messages.
    private static func redacted(_ value: String) -> String {
        guard let scheme = value.range(of: "://"),
              let at = value[scheme.upperBound...].firstIndex(of: "@") else { return value }
        let userInfo = value[scheme.upperBound..<at]
        guard let colon = userInfo.firstIndex(of: ":") else { return value }
        return String(value[..<colon]) + ":***" + String(value[at...])
    }
}
