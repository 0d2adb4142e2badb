import Foundation
internal import GRDB

/// The default store: one SQLite file (WAL mode, so reads do not wait for writes), or an
/// in-memory database for tests.
///
/// A facade over one GRDB `DatabaseWriter`: opening it applies the pending migrations
/// (`SQLiteStore+Migrations.swift`); every call is one transaction; GRDB errors come out as `StoreError`.
public struct SQLiteStore: MatchcastStore {
    let writer: any DatabaseWriter
    /// Every write of the store goes through it (group commit).
    let writes: SQLiteWriteQueue
    /// Checkpoints the file's log off the writer's path (nil in memory).
    let checkpointer: SQLiteCheckpointer?
    /// Takes the contents no activity refers to any more out of `contentState`, as fan-outs open new states.
    let contentPruning = SQLiteContentPruning()
    /// Whether the queue of schema versions before v5 may still hold deliveries.
    let legacyOutbox = SQLiteLegacyOutbox()

    /// What the write-ahead log is cut back to when it starts over (`PRAGMA journal_size_limit`): a burst of writes
    /// (100,000 devices set up, their kick-off) grows it past a gigabyte while checkpoints cannot restart it, and
    /// SQLite otherwise keeps the file at its largest for good. Large enough that a big match's fan-outs, which grow
    /// the log by tens of megabytes each, do not cut and regrow it every few updates (docs/performance-history.md).
    static let walSizeLimit = 512 << 20

    /// Opens (creating it and its parent directories if needed) the database at `path`, and migrates it.
    public init(path: String) throws(StoreError) {
        try self.init(path: path, walSizeLimit: Self.walSizeLimit)
    }

    /// The same, the log cut back to `walSizeLimit` bytes (tests).
    init(path: String, walSizeLimit: Int) throws(StoreError) {
        let url = URL(fileURLWithPath: path)
        let directory = url.deletingLastPathComponent()
        do {
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        } catch {
            throw .configuration("cannot create directory '\(directory.path)' for the SQLite store '\(path)': \(Self.describe(error))")
        }
        let pool: DatabasePool
        let checkpointer = SQLiteCheckpointer(path: url.path)
        do {
            pool = try DatabasePool(
                path: url.path, configuration: Self.makeConfiguration(checkpointer: checkpointer, walSizeLimit: walSizeLimit))
        } catch let error as DatabaseError where error.resultCode == .SQLITE_CANTOPEN || error.resultCode == .SQLITE_PERM {
            throw .configuration("cannot open the SQLite store '\(path)': \(Self.describe(error))")
        } catch {
            // A file that is not a database comes out as `.corrupt`.
            throw StoreError(error, while: "opening the SQLite store '\(path)'")
        }
        try self.init(writer: pool, checkpointer: checkpointer)
    }

    /// A fresh database that lives in memory until the store is released.
    public static func inMemory() throws(StoreError) -> SQLiteStore {
        do {
            return try SQLiteStore(writer: DatabaseQueue(configuration: makeConfiguration()), checkpointer: nil)
        } catch let error as StoreError {
            throw error
        } catch {
            throw .database("cannot create an in-memory SQLite database: \(describe(error))")
        }
    }

    /// Wraps `writer` and migrates it; the writer must come from `makeConfiguration(checkpointer:)`.
    init(writer: any DatabaseWriter, checkpointer: SQLiteCheckpointer?) throws(StoreError) {
        self.writer = writer
        self.checkpointer = checkpointer
        writes = SQLiteWriteQueue(writer: writer)
        do {
            let migrator = Self.migrator
            if try writer.read({ try migrator.hasBeenSuperseded($0) }) {
                throw StoreError.configuration(
                    "the database was migrated by a newer matchcast; refusing to use it with this version")
            }
            try migrator.migrate(writer)
            try writer.read { [legacyOutbox] db in try legacyOutbox.check(db) }
        } catch {
            throw StoreError(error, while: "migrating")
        }
    }

    static func makeConfiguration(checkpointer: SQLiteCheckpointer? = nil, walSizeLimit: Int = walSizeLimit) -> Configuration {
        var config = Configuration()
        config.label = "MatchcastStore"
        config.foreignKeysEnabled = true
        // Another process (`matchcast migrate`) may hold the write lock for a moment.
        config.busyMode = .timeout(5)
        config.prepareDatabase { db in
            // WAL with `synchronous = NORMAL`: a commit survives a crash of the process; a power cut may take the
            // last commits back (never corrupts). A commit then costs no fsync of its own: a fan-out commits in
            // chunks. The page cache holds a 100,000-activity match's rows and indexes.
            try db.execute(sql: "PRAGMA synchronous = NORMAL; PRAGMA cache_size = -65536")
            // The writer's connection restarts the log (once a checkpoint has copied all of it) and then cuts it back.
            try db.execute(sql: "PRAGMA journal_size_limit = \(walSizeLimit)")
            // The writer's connection leaves checkpoints to the checkpointer (readers never make any).
            if !db.configuration.readonly { try checkpointer?.install(on: db) }
        }
        return config
    }

    /// The names of the migrations applied to this database, in order (for `matchcast migrate`).
    public func appliedMigrations() async throws(StoreError) -> [String] {
        let migrator = Self.migrator
        return try await read("reading migrations") { try migrator.completedMigrations($0) }
    }

    /// Closes the database; later calls fail with `.database`. Releasing the store closes it too.
    public func close() throws(StoreError) {
        do {
            // The writer first: should it fail to close, it stays usable, and so do its checkpoints.
            try writer.close()
            try checkpointer?.close()
        } catch {
            throw StoreError(error, while: "closing")
        }
    }

    public func ping() async throws(StoreError) {
        try await read("ping") { db in _ = try Int.fetchOne(db.cachedStatement(sql: "SELECT 1")) }
    }

    public func census() async throws(StoreError) -> StoreCensus {
        try await read("counting") { db in
            func count(_ sql: String) throws -> Int { try Int.fetchOne(db, sql: sql) ?? 0 }
            // An Android or web device's address is kept as a push-to-start token, under its prefix (`DirectAddress`).
            let fcm = try count("SELECT COUNT(*) FROM pushToStartToken WHERE substr(token, 1, 4) = 'fcm:'")
            let webPush = try count("SELECT COUNT(*) FROM pushToStartToken WHERE substr(token, 1, 8) = 'webpush:'")
            return StoreCensus(
                devices: try count("SELECT COUNT(*) FROM device"),
                follows: try count("SELECT COUNT(*) FROM follow"),
                pushToStartTokens: try count("SELECT COUNT(*) FROM pushToStartToken") - fcm - webPush,
                updateTokens: try count("""
                    SELECT COUNT(*) FROM activity WHERE phase != 'ended' AND updateToken IS NOT NULL
                      AND substr(updateToken, 1, 4) != 'fcm:' AND substr(updateToken, 1, 8) != 'webpush:'
                    """),
                fcmTokens: fcm, webPushSubscriptions: webPush)
        }
    }

    // MARK: Access

    /// `mayWait`: a small write of polling or delivery (a match's state, a few activities with their deliveries, the
    /// removal of a few sent ones), which may wait a moment to commit with others (`SQLiteWriteQueue`). Of the API's
    /// writes, only a follow of a live match (its start saved with it) is one.
    func write<T: Sendable>(
        _ what: String, mayWait: Bool = false, _ updates: @escaping @Sendable (Database) throws -> T
    ) async throws(StoreError) -> T {
        do {
            return try await writes.write(mayWait: mayWait, updates)
        } catch {
            throw StoreError(error, while: what)
        }
    }

    func read<T: Sendable>(_ what: String, _ value: @Sendable (Database) throws -> T) async throws(StoreError) -> T {
        do {
            return try await writer.read(value)
        } catch {
            throw StoreError(error, while: what)
        }
    }

    private static func describe(_ error: any Error) -> String {
        (error as? DatabaseError)?.message ?? "\(error)"
    }
}
