import Dispatch
import Synchronization
internal import GRDB
internal import GRDBSQLite

/// Copies the write-ahead log into the database file on a connection and a queue of its own, so that commits never
/// wait for it.
///
/// SQLite's automatic checkpoint runs on the connection that commits, as part of the commit: it copies the log's new
/// pages into the file and syncs both to disk. Once the log holds more than its threshold and cannot restart (a
/// reader is always somewhere in it, as under a stream of API calls), every commit runs one, two syncs each. SQLite's
/// documentation suggests turning it off and checkpointing from another thread; this does that. The writer's
/// connection reports each commit's log size (`sqlite3_wal_hook`, which replaces the automatic checkpoint); once
/// `threshold` pages have been added since the last checkpoint, a passive checkpoint runs here. It never blocks
/// readers or the writer, and what survives a crash or a power cut is what it was: commits are in the log, and the
/// log is synced before any page of it is copied.
final class SQLiteCheckpointer: Sendable {
    /// Pages added to the log since the last checkpoint before the next one (SQLite's own default).
    static let threshold = 1000

    private struct State {
        /// The log's size when the last checkpoint ran (pages).
        var checkpointed = 0
        var running = false
        /// A commit asked for a checkpoint while one ran: run again after it.
        var again = false
        var closed = false
        var count = 0
    }

    private let path: String
    private let state = Mutex(State())
    /// Opened at the first checkpoint (the store's own connections make the file first).
    private let connection = Mutex<DatabaseQueue?>(nil)
    private let queue = DispatchQueue(label: "MatchcastStore.checkpoint", qos: .utility)
    /// What the writer's hook holds: never released (a few bytes per store), so a hook that outlives this object
    /// finds nothing to call rather than freed memory.
    private let signal: Unmanaged<Signal>

    /// The hook's reference to the checkpointer, weak: the store may be gone before its last connection is.
    private final class Signal: Sendable {
        let target = Mutex<Weak?>(nil)
    }

    private struct Weak: Sendable {
        weak var checkpointer: SQLiteCheckpointer?
    }

    /// A checkpointer of the database at `path` (in WAL mode), on a connection it opens for that alone.
    init(path: String) {
        self.path = path
        signal = Unmanaged.passRetained(Signal())
        signal.takeUnretainedValue().target.withLock { $0 = Weak(checkpointer: self) }
    }

    /// Checkpoints run so far (tests).
    var checkpoints: Int { state.withLock { $0.count } }

    /// Makes `db` (the writer's connection) report its commits here instead of checkpointing itself.
    func install(on db: Database) throws {
        guard let handle = db.sqliteConnection else { return }
        try db.execute(sql: "PRAGMA wal_autocheckpoint = 0")
        sqlite3_wal_hook(handle, { context, _, _, pages in
            guard let context else { return SQLITE_OK }
            let signal = Unmanaged<Signal>.fromOpaque(context).takeUnretainedValue()
            signal.target.withLock { $0?.checkpointer }?.committed(pages: Int(pages))
            return SQLITE_OK
        }, signal.toOpaque())
    }

    /// A commit left the log at `pages`.
    private func committed(pages: Int) {
        let start = state.withLock { state -> Bool in
            if pages < state.checkpointed { state.checkpointed = 0 }  // the log restarted from its beginning
            guard !state.closed, pages - state.checkpointed >= Self.threshold else { return false }
            if state.running {
                state.again = true
                return false
            }
            state.running = true
            return true
        }
        if start { queue.async { [weak self] in self?.run() } }
    }

    private func run() {
        while true {
            let pages = connection.withLock { connection -> Int? in
                if connection == nil, !state.withLock({ $0.closed }) {
                    var configuration = Configuration()
                    configuration.label = "MatchcastStore.checkpoint"
                    connection = try? DatabaseQueue(path: path, configuration: configuration)
                }
                // A failed checkpoint (the file busy with `matchcast migrate`, say) leaves the log as it is: the
                // next commit's report tries again.
                return try? connection?.writeWithoutTransaction { try $0.checkpoint(.passive).walFrameCount }
            }
            let again = state.withLock { state -> Bool in
                state.count += 1
                if let pages, pages >= 0 { state.checkpointed = pages }
                guard state.again, !state.closed else {
                    state.running = false
                    return false
                }
                state.again = false
                return true
            }
            if !again { return }
        }
    }

    /// Stops checkpointing and closes its connection (after a checkpoint that is running). What the log still holds
    /// is checkpointed by the next connection to open the file.
    func close() throws {
        state.withLock { $0.closed = true }
        try connection.withLock { connection in
            try connection?.close()
            connection = nil
        }
    }
}
