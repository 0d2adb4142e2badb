import Dispatch
import Synchronization
internal import GRDB

/// The SQLite store's writes, committed in groups: writes that arrive while one is running wait, and then run
/// together in one transaction, each in a savepoint of its own.
///
/// SQLite has one writer, and what a small write costs is mostly its transaction: the hop to the writer's queue,
/// `BEGIN`, the commit's pages into the WAL, the hop back. With many callers at once (API requests, the relay
/// forgetting what it sent, a fan-out's chunks) the queue turns N of those into one. A write that fails rolls back
/// its own savepoint and fails alone; the others commit. Each caller resumes only after the commit, so what a call
/// returns is as durable as before. One caller alone gets a transaction of its own, as before.
///
/// A write that may wait (`mayWait`: the small writes of polling and delivery, each a transaction of a few rows on
/// pages that every match shares) and that finds the writer idle but busy of late (a transaction began less than
/// twice `linger` ago) waits `linger` for others to commit with it, rather than committing alone: with many matches
/// changing, each commit wrote the same outbox and state pages into the WAL again. A write that may not wait (a
/// registration, a token, a large chunk of a fan-out) starts the transaction at once, taking whatever waits with it;
/// so does any write an API request waits for (`StoreWrites.callerWaits`), a follow's start included.
/// How `linger` was chosen: docs/performance-history.md.
final class SQLiteWriteQueue: Sendable {
    typealias Work = @Sendable (Database) throws -> any Sendable
    typealias Outcome = Result<any Sendable, any Error>

    private struct Job: Sendable {
        let work: Work
        let done: CheckedContinuation<Outcome, Never>
    }

    private struct State {
        var pending: [Job] = []
        /// A transaction runs, or is about to: what is pending is taken by it or the next.
        var draining = false
        /// Writes that may wait are pending, and a timer will start their transaction unless another does first.
        var lingering = false
        /// When the last transaction began.
        var lastBegan: ContinuousClock.Instant?
    }

    /// The most writes one transaction takes; the rest wait for the next.
    static let groupLimit = 256

    /// How long a write that may wait waits for others, when a transaction began less than twice this ago.
    let linger: Duration

    private let writer: any DatabaseWriter
    private let state = Mutex(State())
    private let transactions = Atomic<Int>(0)

    init(writer: any DatabaseWriter, linger: Duration = .milliseconds(10)) {
        self.writer = writer
        self.linger = linger
    }

    /// Writes waiting for a transaction (tests).
    var pendingCount: Int { state.withLock { $0.pending.count } }

    /// Transactions run so far (tests).
    var transactionCount: Int { transactions.load(ordering: .relaxed) }

    func write<T: Sendable>(mayWait: Bool = false, _ updates: @escaping @Sendable (Database) throws -> T) async throws -> T {
        // A write someone waits for (an API request's) never lingers.
        let mayWait = mayWait && !StoreWrites.callerWaits
        let outcome = await withCheckedContinuation { (done: CheckedContinuation<Outcome, Never>) in
            let now: ContinuousClock.Instant? = mayWait && linger > .zero ? .now : nil
            let start = state.withLock { state -> Start in
                state.pending.append(Job(work: { try updates($0) }, done: done))
                guard !state.draining else { return .none }
                if let now, let last = state.lastBegan, now - last < linger * 2 {
                    guard !state.lingering else { return .none }
                    state.lingering = true
                    return .later
                }
                state.draining = true
                return .now
            }
            switch start {
            case .now: drain()
            case .later: startAfterLinger()
            case .none: break
            }
        }
        let value = try outcome.get()
        guard let typed = value as? T else {
            throw StoreError.database("a write's result came back as \(type(of: value)), not \(T.self)")
        }
        return typed
    }

    private enum Start { case now, later, none }

    /// Starts a transaction for the writes that wait, `linger` from now, unless one started meanwhile.
    private func startAfterLinger() {
        let (seconds, attoseconds) = linger.components
        let delay = DispatchTimeInterval.nanoseconds(Int(seconds) * 1_000_000_000 + Int(attoseconds / 1_000_000_000))
        DispatchQueue.global().asyncAfter(deadline: .now() + delay) { [self] in
            let start = state.withLock { state -> Bool in
                state.lingering = false
                guard !state.draining, !state.pending.isEmpty else { return false }
                state.draining = true
                return true
            }
            if start { drain() }
        }
    }

    /// Runs on the writer's queue until nothing is pending.
    private func drain() {
        writer.asyncWriteWithoutTransaction { db in
            while true {
                let jobs = self.state.withLock { state -> [Job] in
                    guard !state.pending.isEmpty else {
                        state.draining = false
                        return []
                    }
                    state.lastBegan = ContinuousClock.now
                    let count = min(state.pending.count, Self.groupLimit)
                    let taken = Array(state.pending.prefix(count))
                    state.pending.removeFirst(count)
                    return taken
                }
                guard !jobs.isEmpty else { return }
                self.transactions.add(1, ordering: .relaxed)
                Self.run(jobs, db)
            }
        }
    }

    /// One transaction for `jobs`; each job's outcome reaches its caller after the commit (or the failure).
    private static func run(_ jobs: [Job], _ db: Database) {
        var outcomes: [Outcome] = []
        outcomes.reserveCapacity(jobs.count)
        do {
            try db.inTransaction(.immediate) {
                if jobs.count == 1 {
                    outcomes.append(.success(try jobs[0].work(db)))
                    return .commit
                }
                for job in jobs { outcomes.append(try inSavepoint(job.work, db)) }
                return .commit
            }
        } catch {
            // Nothing of the group was kept: the transaction could not begin or commit, or the one job failed.
            for job in jobs { job.done.resume(returning: .failure(error)) }
            return
        }
        for (job, outcome) in zip(jobs, outcomes) { job.done.resume(returning: outcome) }
    }

    /// One job of a group, in a savepoint of its own: what it wrote is rolled back when it fails, and the group goes
    /// on. Throws only when the savepoint itself cannot be taken, rolled back or released: then the whole group
    /// fails (with the job's error when SQLite had rolled the transaction back already). The three statements are
    /// prepared once and run through SQLite's C API (GRDB's `inSavepoint` prepares them anew for every job).
    private static func inSavepoint(_ work: Work, _ db: Database) throws -> Outcome {
        try SQLiteRawStatement(db, sql: "SAVEPOINT job").run()
        let outcome: Outcome
        do {
            outcome = .success(try work(db))
        } catch {
            do {
                try SQLiteRawStatement(db, sql: "ROLLBACK TO SAVEPOINT job").run()
            } catch _ {
                // SQLite rolled back the whole transaction itself (a full disk, an I/O error): the group fails, with
                // the job's error, which says why.
                throw error
            }
            outcome = .failure(error)
        }
        try SQLiteRawStatement(db, sql: "RELEASE SAVEPOINT job").run()
        return outcome
    }
}
