import Foundation
import Logging
import NIOCore
import NIOPosix
public import PostgresNIO
import Synchronization

/// The store for several replicas: one PostgreSQL database shared by every `matchcast serve`.
///
/// A facade over a `PostgresClient` (a connection pool, replaced by a new one after the server went away:
/// `PostgresPools`). `run()` runs the pool: it must be running before the first call (queries wait for it
/// otherwise), and stop only after the last one (`withStoreRunning`). `open()`
/// applies the pending migrations (`PostgresStore+Migrations.swift`) on a connection of its own, so it works
/// before the client runs and fails fast with a clear error when the server cannot be reached. Every call that
/// writes more than one row is one transaction; PostgreSQL errors come out as `StoreError`.
public final class PostgresStore: MatchcastStore {
    /// Where and how to connect.
    public struct Configuration: Sendable {
        /// How the connection is encrypted, as libpq's `sslmode` says it.
        public enum TLSMode: String, Sendable, CaseIterable {
            /// Plain TCP.
            case disable
            /// TLS when the server offers it, plain otherwise (libpq's default).
            case prefer
            /// TLS, refused when the server does not offer it; the certificate is not checked (as in libpq).
            case require
            /// TLS with the certificate checked against the system's roots and the host name.
            case verifyFull = "verify-full"
        }

        public var host: String
        public var port: Int
        public var username: String
        /// Never logged or printed.
        public var password: String?
        /// The database; `nil` is the user's own (PostgreSQL's default).
        public var database: String?
        public var tls: TLSMode
        /// How long one connection attempt may take (TCP, TLS and authentication).
        public var connectTimeout: Duration
        /// How long a call waits for a pooled connection before it fails with `.database` (the server is down,
        /// or every connection is busy): a safety net so a dead database is an error, never a hang.
        public var leaseTimeout: Duration
        /// The schema the tables live in (`search_path`), created when missing; `nil` is the server's default
        /// (`public`). Lets several brokers, or tests, share one database.
        public var schema: String?
        /// The most connections the pool holds.
        public var maximumConnections: Int
        public static let defaultMaximumConnections = 20
        /// True (the default): all `maximumConnections` are opened at start and kept, so that no connection arms an
        /// idle timer whenever it goes idle (see `init`). False: opened as calls need them and closed after a minute
        /// idle, for a store that shares its server with many others (the tests').
        public var keepsConnectionsOpen = true
        /// How often an idle connection is checked with `SELECT 1`; nil (the default): never, a connection that
        /// died while idle fails its next call and is replaced. On, every connection that goes idle arms a timer.
        public var keepAlive: Duration?

        public init(
            host: String, port: Int = 5432, username: String, password: String? = nil, database: String? = nil,
            tls: TLSMode = .prefer, connectTimeout: Duration = .seconds(10), leaseTimeout: Duration = .seconds(30),
            schema: String? = nil, maximumConnections: Int = defaultMaximumConnections, keepAlive: Duration? = nil
        ) {
            self.host = host
            self.port = port
            self.username = username
            self.password = password
            self.database = database
            self.tls = tls
            self.connectTimeout = connectTimeout
            self.leaseTimeout = leaseTimeout
            self.schema = schema
            self.maximumConnections = maximumConnections
            self.keepAlive = keepAlive
        }

        /// How long a small write of polling or delivery waits for others of its kind when they come often
        /// (`PostgresWriteGroup`); zero: each goes alone. How it was chosen: docs/performance-history.md.
        var writeLinger: Duration = .milliseconds(20)

        /// Every setting but the password, for comparing two configurations.
        var identity: String {
            "\(endpoint) \(tls.rawValue) \(connectTimeout) \(leaseTimeout) \(schema ?? "") \(maximumConnections) "
                + "\(keepsConnectionsOpen) \(keepAlive.map { "\($0)" } ?? "-") "
                + (password ?? "")
        }

        /// `user@host:port/database`, for messages: never the password.
        public var endpoint: String {
            "\(username)@\(host.contains(":") ? "[\(host)]" : host):\(port)/\(database ?? username)"
        }
    }

    /// The connection pool in use. Run by `run()`, for as long as the store is used.
    public var client: PostgresClient { pools.client }
    /// The pool, and the ones that replace it after the server went away.
    let pools: PostgresPools
    public let configuration: Configuration
    let logger: Logger
    /// Whether the server was there at the last look: calls fail fast while it is not.
    let reachability: PostgresReachability
    /// Small writes of polling and delivery, sent together when many come at once (`PostgresWriteGroup`).
    let matchSaves: PostgresWriteGroup<MatchRow>
    let removals: PostgresWriteGroup<[String]>
    let saves: PostgresWriteGroup<GroupedSave>
    /// The most rows of a write that may wait for others (as SQLite's `mayWait(activities:deliveries:)`): a fan-out
    /// to a few activities, the removal of a few sent deliveries. A larger one goes at once.
    static let smallWrite = 64

    /// Makes the store without connecting; call `migrate()` (or use `open`) before the first query.
    public init(configuration: Configuration, logger: Logger = Logger(label: "matchcast.postgres")) throws(StoreError) {
        if let schema = configuration.schema { try Self.checkSchemaName(schema) }
        self.configuration = configuration
        self.logger = logger
        reachability = PostgresReachability(endpoint: configuration.endpoint, logger: logger)
        matchSaves = PostgresWriteGroup(linger: configuration.writeLinger)
        removals = PostgresWriteGroup(linger: configuration.writeLinger)
        saves = PostgresWriteGroup(linger: configuration.writeLinger)
        var clientConfiguration = PostgresClient.Configuration(
            host: configuration.host, port: configuration.port, username: configuration.username,
            password: configuration.password, database: configuration.database,
            tls: Self.clientTLS(configuration.tls))
        clientConfiguration.options.connectTimeout = configuration.connectTimeout
        clientConfiguration.options.maximumConnections = max(1, configuration.maximumConnections)
        clientConfiguration.options.additionalStartupParameters = Self.startupParameters(configuration)
        // A fixed pool, no keep-alive unless asked for: postgres-nio's pool arms a keep-alive timer, and an idle timer
        // for a connection beyond the minimum, each time a connection goes idle, on `Task.sleep`, whose dispatch timer
        // outlives its cancellation, so busy pools pile up pending timers (docs/performance-history.md).
        if configuration.keepsConnectionsOpen {
            clientConfiguration.options.minimumConnections = clientConfiguration.options.maximumConnections
        }
        clientConfiguration.options.keepAliveBehavior = configuration.keepAlive.map { .init(frequency: $0) }
        pools = PostgresPools(configuration: clientConfiguration, logger: logger)
    }

    /// Runs the connection pool (and any that replaces it) until cancelled: for as long as the store is used.
    public func run() async {
        await pools.run()
    }

    /// Makes the store and migrates its database: a clear error now when the server cannot be reached, the
    /// login is refused or the schema belongs to a newer matchcast.
    public static func open(
        _ configuration: Configuration, logger: Logger = Logger(label: "matchcast.postgres")
    ) async throws(StoreError) -> PostgresStore {
        let store = try PostgresStore(configuration: configuration, logger: logger)
        try await store.migrate()
        return store
    }

    public func ping() async throws(StoreError) {
        try await withConnection("ping") { connection in
            try await connection.query("SELECT 1", logger: self.logger).consume()
        }
    }

    public func census() async throws(StoreError) -> StoreCensus {
        try await withConnection("counting") { connection in
            let rows = try await connection.query(
                """
                SELECT (SELECT COUNT(*) FROM device), (SELECT COUNT(*) FROM follow),
                       (SELECT COUNT(*) FROM push_to_start_token),
                       (SELECT COUNT(*) FROM activity WHERE open AND update_token IS NOT NULL
                          AND left(update_token, 4) != 'fcm:' AND left(update_token, 8) != 'webpush:'),
                       (SELECT COUNT(*) FROM push_to_start_token WHERE left(token, 4) = 'fcm:'),
                       (SELECT COUNT(*) FROM push_to_start_token WHERE left(token, 8) = 'webpush:')
                """,
                logger: self.logger
            ).collect((Int, Int, Int, Int, Int, Int).self)
            let counts = rows.first ?? (0, 0, 0, 0, 0, 0)
            // An Android or web device's address is kept as a push-to-start token, under its prefix (`DirectAddress`).
            return StoreCensus(
                devices: counts.0, follows: counts.1, pushToStartTokens: counts.2 - counts.4 - counts.5, updateTokens: counts.3,
                fcmTokens: counts.4, webPushSubscriptions: counts.5)
        }
    }

    // MARK: Access

    /// Runs `body` on a pooled connection; waits at most `leaseTimeout` for one, and fails sooner when the server
    /// cannot be reached (`PostgresReachability`).
    ///
    /// `body` runs in a task of its own, which the call waits for: a statement under way when the server shuts down
    /// can wait forever on its closed connection (postgres-nio does not always fail it), and a call must not. Once
    /// the call has waited `patience` with its connection, the connection is looked at every `closedCheck`; found
    /// closed twice in a row, the call fails with `.database` (its outcome unknown, as after any lost connection) and
    /// leaves the stuck task behind. A cancelled call cancels its body and still waits for it (so that, say, a
    /// transaction the body committed is not reported as failed), as long as the connection stays open.
    func withConnection<T: Sendable>(
        _ what: String, _ body: @escaping @Sendable (PostgresConnection) async throws -> T
    ) async throws(StoreError) -> T {
        let client = try await pool()
        let reachability = self.reachability
        let pools = self.pools
        let timeout = configuration.leaseTimeout
        let patience = min(reachability.currentPatience, timeout)
        let call = PostgresCall<T>()
        let running = Task {
            do {
                call.finish(.success(try await client.withConnection { connection in
                    call.leased(connection)
                    reachability.reached()
                    return try await body(connection)
                }))
            } catch {
                call.finish(.failure(error))
            }
        }
        do {
            return try await withThrowingTaskGroup(of: LeaseOutcome<T>.self) { group in
                // The looks at the connection wait on a timer a cancelled caller does not end, so that they go on while
                // a cancelled body ends; the timer is stopped when the call ends.
                defer { call.stopLooking() }
                /// The next look at whether the call's connection closed under it.
                func lookAgain(seen: Bool = false) {
                    group.addTask {
                        await call.waitToLook(after: Self.closedCheck)
                        return .closedCheck(seen: seen)
                    }
                }
                group.addTask { .done(try await call.value(cancelling: running)) }
                group.addTask {
                    try? await Self.leaseTimer(patience)
                    return .patienceRanOut
                }
                while let outcome = try await group.next() {
                    switch outcome {
                    case .done(let value):
                        group.cancelAll()
                        return value
                    case .patienceRanOut:
                        guard !call.isLeased else {
                            lookAgain()
                            continue
                        }
                        group.addTask {
                            if let problem = await reachability.check({ try await self.attemptConnection() }) {
                                return .unreachable(problem)
                            }
                            try? await Self.leaseTimer(timeout - patience)
                            return .timerFired
                        }
                    case .closedCheck(let seen):
                        guard call.connectionIsClosed else {
                            lookAgain()
                            continue
                        }
                        guard seen else {
                            // Closed under the call: it gets one more look to fail on its own, with its own error.
                            lookAgain(seen: true)
                            continue
                        }
                        let failure = StoreError.database(
                            "\(what): the connection to PostgreSQL at \(configuration.endpoint) closed under the call, "
                                + "which never ended; its outcome is unknown")
                        // The body is left behind: its outcome, should it ever come, is not waited for.
                        call.finish(.failure(failure))
                        group.cancelAll()
                        pools.retire(client)
                        logger.error("PostgreSQL connection closed under a call that never ended; the call fails, its outcome unknown", metadata: [
                            "call": "\(what)", "endpoint": "\(configuration.endpoint)",
                        ])
                        throw failure
                    case .unreachable(let problem):
                        // Once a connection is leased the call runs to its end: cancelling a query mid-way
                        // would leave the transaction's fate unknown.
                        guard !call.isLeased else {
                            lookAgain()
                            continue
                        }
                        group.cancelAll()
                        pools.retire(client)
                        throw unreachable(problem)
                    case .timerFired:
                        guard !call.isLeased else {
                            lookAgain()
                            continue
                        }
                        group.cancelAll()
                        throw StoreError.database(
                            "no connection to PostgreSQL at \(configuration.endpoint) within \(timeout) "
                                + "(every connection busy, or the server unreachable)")
                    }
                }
                throw StoreError.database("the PostgreSQL call ended without a result")
            }
        } catch {
            if StoreError.lostServer(error) { pools.retire(client) }
            throw StoreError(postgres: error, while: what)
        }
    }

    /// A call failed because a connection attempt outside the pool could not reach the server.
    private func unreachable(_ problem: String) -> StoreError {
        .database("PostgreSQL at \(configuration.endpoint) cannot be reached (\(problem))")
    }

    /// How often a call that runs long looks at whether its connection closed under it (`withConnection`).
    static let closedCheck: Duration = .seconds(1)

    /// The pool a call may use: the one in use, unless it lost the server; then, once a connection attempt outside
    /// the pool that began after the loss succeeds, a new one in its place (`PostgresPools`). Until then every call
    /// fails at once.
    func pool() async throws(StoreError) -> PostgresClient {
        if let usable = pools.usable { return usable }
        if let problem = await reachability.check(startedAfter: pools.retiredAt, { try await self.attemptConnection() }) {
            throw unreachable(problem)
        }
        return await pools.renewed()
    }

    /// Waits `timeout` on a NIO timer that a cancellation takes off its event loop's queue at once: every call that gets
    /// its connection in time cancels it. (A cancelled `Task.sleep` leaves its dispatch timer armed until the deadline:
    /// one per call for the whole `leaseTimeout`, which at thousands of calls a second kept tens of thousands of timers
    /// pending and firing, each waking a thread, long after the calls were done.)
    static func leaseTimer(_ timeout: Duration) async throws {
        let scheduled = MultiThreadedEventLoopGroup.singleton.any().scheduleTask(in: TimeAmount(timeout)) {}
        try await withTaskCancellationHandler {
            try await scheduled.futureResult.get()
        } onCancel: {
            scheduled.cancel()
        }
    }

    /// Runs `body` in one transaction on a pooled connection: committed when it returns, rolled back when it throws.
    func transaction<T: Sendable>(
        _ what: String, _ body: @escaping @Sendable (PostgresConnection) async throws -> T
    ) async throws(StoreError) -> T {
        let logger = self.logger
        return try await withConnection(what) { connection in
            try await Self.inTransaction(connection, logger: logger, body)
        }
    }

    static func inTransaction<T: Sendable>(
        _ connection: PostgresConnection, logger: Logger, _ body: @Sendable (PostgresConnection) async throws -> T
    ) async throws -> T {
        try await connection.query("BEGIN", logger: logger).consume()
        do {
            let value = try await body(connection)
            try await connection.query("COMMIT", logger: logger).consume()
            return value
        } catch {
            // A broken connection rolls back on its own; the pool replaces it.
            try? await connection.query("ROLLBACK", logger: logger).consume()
            throw error
        }
    }

    // MARK: Configuration

    static func clientTLS(_ mode: Configuration.TLSMode) -> PostgresClient.Configuration.TLS {
        switch mode {
        case .disable: return .disable
        case .prefer: return .prefer(unverifiedTLS)
        case .require: return .require(unverifiedTLS)
        case .verifyFull: return .require(.makeClientConfiguration())
        }
    }

    static func connectionTLS(_ mode: Configuration.TLSMode) throws -> PostgresConnection.Configuration.TLS {
        switch mode {
        case .disable: return .disable
        case .prefer: return .prefer(try NIOSSLContext(configuration: unverifiedTLS))
        case .require: return .require(try NIOSSLContext(configuration: unverifiedTLS))
        case .verifyFull: return .require(try NIOSSLContext(configuration: .makeClientConfiguration()))
        }
    }

    /// libpq's `prefer` and `require` encrypt without checking the certificate; `verify-full` checks it.
    private static var unverifiedTLS: TLSConfiguration {
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.certificateVerification = .none
        return tls
    }

    static func startupParameters(_ configuration: Configuration) -> [(String, String)] {
        var parameters = [("application_name", "matchcast")]
        // The schema name is checked to be a plain identifier; quoted so it keeps its case.
        if let schema = configuration.schema { parameters.append(("search_path", "\"\(schema)\"")) }
        return parameters
    }

    static func checkSchemaName(_ schema: String) throws(StoreError) {
        let allowed = Set("abcdefghijklmnopqrstuvwxyz0123456789_")
        guard !schema.isEmpty, schema.count <= 63, schema.allSatisfy({ allowed.contains($0) }),
              !schema.first!.isNumber else {
            throw .configuration("PostgreSQL schema '\(schema)' is not a plain name (a-z, 0-9, _; at most 63)")
        }
    }
}

/// What finished first in `withConnection`: the call, or one of its timers.
private enum LeaseOutcome<T: Sendable>: Sendable {
    case done(T)
    /// The call waited `PostgresReachability.patience`: time to ask whether the server is there, or, once it has a
    /// connection, to start looking at whether that closed under it.
    case patienceRanOut
    case unreachable(String)
    case timerFired
    /// Time to look at the call's connection again; `seen`: it was closed at the last look.
    case closedCheck(seen: Bool)
}

/// One `withConnection` call: its connection once leased, and its outcome, which the task running it gives and the
/// call waits for (or stops waiting for).
private final class PostgresCall<T: Sendable>: Sendable {
    private struct State {
        var connection: PostgresConnection?
        var outcome: Result<T, any Error>?
        var waiter: CheckedContinuation<T, any Error>?
        /// The timer of the next look at the connection, and whether the call ended (no more looks).
        var lookTimer: Scheduled<Void>?
        var stoppedLooking = false
    }

    private let state = Mutex(State())

    func leased(_ connection: PostgresConnection) { state.withLock { $0.connection = connection } }

    var isLeased: Bool { state.withLock { $0.connection != nil } }

    var connectionIsClosed: Bool { state.withLock { $0.connection?.isClosed ?? false } }

    /// The call's outcome; the first one given wins (a call that stopped waiting ignores the task's late one).
    func finish(_ outcome: Result<T, any Error>) {
        let waiter = state.withLock { state -> CheckedContinuation<T, any Error>? in
            guard state.outcome == nil else { return nil }
            state.outcome = outcome
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume(with: outcome)
    }

    /// Waits `delay` (less once the call has ended), whether or not the waiting task is cancelled.
    func waitToLook(after delay: Duration) async {
        let scheduled = MultiThreadedEventLoopGroup.singleton.any().scheduleTask(in: TimeAmount(delay)) {}
        let stopped = state.withLock { state in
            if !state.stoppedLooking { state.lookTimer = scheduled }
            return state.stoppedLooking
        }
        if stopped { scheduled.cancel() }
        _ = try? await scheduled.futureResult.get()
    }

    /// The call ended: the look waiting now ends at once, and none waits after it.
    func stopLooking() {
        let timer = state.withLock { state in
            state.stoppedLooking = true
            defer { state.lookTimer = nil }
            return state.lookTimer
        }
        timer?.cancel()
    }

    /// Waits for the outcome. Cancelled, it cancels `task` and waits on for it (`withConnection` stops waiting if the
    /// connection closes under it).
    func value(cancelling task: Task<Void, Never>) async throws -> T {
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
                let ready = state.withLock { state -> Result<T, any Error>? in
                    if let outcome = state.outcome { return outcome }
                    state.waiter = continuation
                    return nil
                }
                if let ready { continuation.resume(with: ready) }
            }
        } onCancel: {
            task.cancel()
        }
    }
}

// MARK: Rows

extension PostgresRowSequence {
    /// Reads and drops every row: a statement's result must be consumed before the next one on the connection.
    func consume() async throws {
        for try await _ in self {}
    }

    /// Every row decoded as `type`.
    func collect<each Column: PostgresDecodable>(_ type: (repeat each Column).Type) async throws -> [(repeat each Column)] {
        var rows: [(repeat each Column)] = []
        for try await row in self {
            rows.append(try row.decode(type))
        }
        return rows
    }

    /// How many rows there were (`... RETURNING 1` counts what a statement changed).
    func count() async throws -> Int {
        var count = 0
        for try await _ in self { count += 1 }
        return count
    }
}

extension Date {
    /// The instant a store keeps: whole milliseconds, as every store does (the protocol's precision).
    var storedPrecision: Date {
        Date(timeIntervalSince1970: (timeIntervalSince1970 * 1000).rounded(.down) / 1000)
    }

    /// A stored instant as read back (whole milliseconds, through microseconds): the same value `storedPrecision` gave.
    var readBack: Date {
        Date(timeIntervalSince1970: (timeIntervalSince1970 * 1000).rounded() / 1000)
    }
}

/// Runs `body` while the store's background work runs: a `PostgresStore`'s connection pool (`run()`),
/// started before `body` (so its first query finds it) and stopped after it (so the last one does); for the
/// other stores, just `body`. The broker wraps its whole life in it: restore, then its `ServiceGroup`, whose
/// services all stop before the pool does.
public func withStoreRunning<T: Sendable>(_ store: any MatchcastStore, _ body: () async throws -> T) async throws -> T {
    guard let postgres = store as? PostgresStore else { return try await body() }
    return try await withThrowingTaskGroup(of: Void.self) { group in
        group.addTask { await postgres.run() }
        // Asked for a connection before it runs, the pool would log a warning (and wait).
        await postgres.pools.waitUntilRunning()
        defer { group.cancelAll() }
        return try await body()
    }
}
