import ArgumentParser
import Foundation
import Logging
import MatchcastCLI
import MatchcastStore
import PostgresNIO

/// A store a benchmark can run on.
enum BenchStoreKind: String, Sendable, CaseIterable {
    /// `InMemoryStore` (as `serve --store memory`).
    case memory
    /// A SQLite file in a temporary folder, removed afterwards.
    case sqlite
    /// A scratch database the benchmark creates on the PostgreSQL server of `--postgres-url` (or
    /// `MATCHCAST_POSTGRES_URL`) and drops afterwards: it never touches the database the URL names.
    case postgres
}

/// `--store memory`, `--store sqlite,postgres`, `--store all`: the stores a benchmark runs on, one after the
/// other in one invocation, in the order given. Options take it with `transform: BenchStoreList.parse`, so that a bad
/// value's message says what is wrong (their help then names the default itself).
struct BenchStoreList: Sendable, Equatable, CustomStringConvertible {
    let kinds: [BenchStoreKind]

    init(_ kinds: [BenchStoreKind]) { self.kinds = kinds }

    /// Parses a comma list of store names, or `all`; the error says what is wrong.
    static func parse(_ text: String) throws(BenchSetupError) -> BenchStoreList {
        let names = text.split(separator: ",", omittingEmptySubsequences: false)
            .map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
        if names == ["all"] { return BenchStoreList(BenchStoreKind.allCases) }
        var kinds: [BenchStoreKind] = []
        for name in names {
            guard let kind = BenchStoreKind(rawValue: name) else {
                throw BenchSetupError("store '\(name)' is not one of \(Self.allowed)")
            }
            guard !kinds.contains(kind) else { throw BenchSetupError("store '\(name)' is named twice") }
            kinds.append(kind)
        }
        return BenchStoreList(kinds)
    }

    static let allowed = BenchStoreKind.allCases.map(\.rawValue).joined(separator: ", ") + " (a comma list), or all"

    var description: String { kinds.map(\.rawValue).joined(separator: ",") }

    var needsPostgres: Bool { kinds.contains(.postgres) }

    /// The PostgreSQL server to make scratch databases on: `--postgres-url`, else `MATCHCAST_POSTGRES_URL`. Nil when no
    /// store needs one; an error (exit 2 in the commands) when one does and neither names a postgres:// URL.
    func postgresServer(option: String?, environment: [String: String]) throws(BenchSetupError) -> String? {
        guard needsPostgres else { return nil }
        let given = option ?? environment["MATCHCAST_POSTGRES_URL"].flatMap { $0.isEmpty ? nil : $0 }
        guard let given else {
            throw BenchSetupError(
                "--store postgres needs a server: give --postgres-url postgres://USER@HOST:PORT/DB or set "
                    + "MATCHCAST_POSTGRES_URL (the benchmark creates a scratch database there and drops it afterwards)")
        }
        let parsed: StoreURL
        do {
            parsed = try StoreURL(given)
        } catch {
            throw BenchSetupError("--postgres-url: \(error)")
        }
        guard parsed.postgresConfiguration != nil else {
            throw BenchSetupError("--postgres-url must be a postgres:// URL, got '\(parsed)'")
        }
        return given
    }
}

/// A benchmark cannot start as asked (the commands print it and exit 2).
struct BenchSetupError: Error, CustomStringConvertible, Equatable {
    let description: String
    init(_ description: String) { self.description = description }
}

/// A PostgreSQL database of the benchmark's own on the server a URL names: created under a unique name, and
/// dropped (with whatever connections are left on it) when the run is over, so the benchmark never reads or
/// writes the database the URL itself names.
struct ScratchPostgresDatabase: Sendable {
    let name: String
    /// The server's URL with this database as its path (what `serve --store` gets).
    let url: String
    /// The same, for an in-process `PostgresStore`.
    let configuration: PostgresStore.Configuration
    private let server: PostgresStore.Configuration

    static func create(serverURL: String) async throws -> ScratchPostgresDatabase {
        guard let server = try StoreURL(serverURL).postgresConfiguration, var components = URLComponents(string: serverURL)
        else { throw BenchSetupError("not a postgres:// URL") }
        let suffix = String(UInt32.random(in: 0...UInt32.max), radix: 16)
        let name = "matchcast_bench_\(getpid())_\(suffix)"
        components.path = "/" + name
        guard let url = components.string else { throw BenchSetupError("cannot build the scratch database's URL") }
        var configuration = server
        configuration.database = name
        let database = ScratchPostgresDatabase(name: name, url: url, configuration: configuration, server: server)
        // A name of our own making (letters, digits, underscores): safe to splice, as DDL takes no bind parameters.
        try await database.execute("CREATE DATABASE \"\(name)\"")
        let settings = try await database.durability()
        StandardStreams.err("postgres server: \(settings.map { "\($0.name) = \($0.value)" }.joined(separator: ", "))")
        if settings.contains(where: { $0.value != "on" }) {
            StandardStreams.err(
                "warning: this PostgreSQL server does not wait for the disk at commit: its figures are not those of a "
                    + "durable deployment (Scripts/postgres start --durable starts one that does)")
        }
        return database
    }

    /// The server's WAL position in bytes (`pg_current_wal_lsn()`): the difference of two is the WAL written between
    /// them, by every database of the server.
    func walPosition() async throws -> Int64 {
        let rows = try await query("SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')::bigint::text")
        guard let text = rows.first, let position = Int64(text) else { throw BenchSetupError("no WAL position from the server") }
        return position
    }

    /// What a commit waits for on this server: `fsync` and `synchronous_commit`, as `SHOW` gives them.
    private func durability() async throws -> [(name: String, value: String)] {
        var result: [(name: String, value: String)] = []
        for name in ["fsync", "synchronous_commit"] {
            let rows = try await query("SHOW \(name)")
            result.append((name, rows.first ?? "?"))
        }
        return result
    }

    /// Drops the database, closing connections a killed broker may have left; failures are only reported.
    func drop() async {
        do {
            try await execute("DROP DATABASE IF EXISTS \"\(name)\" WITH (FORCE)")
        } catch {
            StandardStreams.err("warning: could not drop the scratch database \(name): \(error)")
        }
    }

    /// One statement on the server's own database, through a pool of one connection run for just this.
    private func execute(_ statement: String) async throws {
        _ = try await query(statement)
    }

    /// One statement on the server's own database: the first column of each row it returns, as text.
    private func query(_ statement: String) async throws -> [String] {
        var quiet = Logger(label: "matchcast.bench.scratch-database", factory: { _ in SwiftLogNoOpLogHandler() })
        quiet.logLevel = .critical
        var single = server
        single.maximumConnections = 1
        let store = try PostgresStore(configuration: single, logger: quiet)
        var values: [String] = []
        try await withStoreRunning(store) {
            for try await row in try await store.client.query(PostgresQuery(unsafeSQL: statement), logger: quiet) {
                values.append(try row.decode(String.self))
            }
        }
        return values
    }
}

/// Where a benchmark's `serve` child keeps its store: the `--store` URL it gets, in a folder of the run's own, and the
/// scratch PostgreSQL database to drop afterwards.
struct ServeChildStore: Sendable {
    let url: String
    let scratch: ScratchPostgresDatabase?

    static func make(_ kind: BenchStoreKind, in directory: URL, postgresServer: String?) async throws -> ServeChildStore {
        switch kind {
        case .memory: return ServeChildStore(url: "memory", scratch: nil)
        case .sqlite: return ServeChildStore(url: "sqlite:" + directory.appendingPathComponent("serve.sqlite").path, scratch: nil)
        case .postgres:
            guard let postgresServer else { throw BenchSetupError("--store postgres needs --postgres-url") }
            let made = try await ScratchPostgresDatabase.create(serverURL: postgresServer)
            return ServeChildStore(url: made.url, scratch: made)
        }
    }

    /// A new temporary folder for one run: `matchcast-bench-<what>-<pid>-<store>-<random>`.
    static func folder(_ what: String, _ kind: BenchStoreKind) throws -> URL {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "matchcast-bench-\(what)-\(getpid())-\(kind.rawValue)-\(String(UInt32.random(in: 0...UInt32.max), radix: 16))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        return directory
    }

    func drop() async {
        await scratch?.drop()
    }
}
