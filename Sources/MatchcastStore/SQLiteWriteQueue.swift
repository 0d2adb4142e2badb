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
final class SQLiteWriteQueue: Sendable {
    typealias Work = @Sendable (Database) throws -> any Sendable
    typealias Outcome = Result<any Sendable, any Error>

    private struct Job: Sendable {
        let work: Work
        let done: CheckedContinuation<Outcome, Never>
    }

    private struct State {
        var pending: [Job] = []
        var draining = false
    }

    /// The most writes one transaction takes; the rest wait for the next.
    static let groupLimit = 256

    private let writer: any DatabaseWriter
    private let state = Mutex(State())
    private let transactions = Atomic<Int>(0)

    init(writer: any DatabaseWriter) {
        self.writer = writer
    }

    /// Writes waiting for a transaction (tests).
    var pendingCount: Int { state.withLock { $0.pending.count } }

    /// Transactions run so far (tests).
    var transactionCount: Int { transactions.load(ordering: .relaxed) }

    func write<T: Sendable>(_ updates: @escaping @Sendable (Database) throws -> T) async throws -> T {
        let outcome = await withCheckedContinuation { (done: CheckedContinuation<Outcome, Never>) in
            let start = state.withLock { state -> Bool in
                state.pending.append(Job(work: { try updates($0) }, done: done))
                guard !state.draining else { return false }
                state.draining = true
                return true
            }
            if start { drain() }
        }
        let value = try outcome.get()
        guard let typed = value as? T else {
            throw StoreError.database("a write's result came back as \(type(of: value)), not \(T.self)")
        }
        return typed
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
                for job in jobs {
                    var value: (any Sendable)?
                    do {
                        try db.inSavepoint {
                            value = try job.work(db)
                            return .commit
                        }
                        if let value { outcomes.append(.success(value)) }
                    } catch {
                        outcomes.append(.failure(error))
                    }
                }
                return .commit
            }
        } catch {
            // Nothing of the group was kept: the transaction could not begin or commit, or the one job failed.
            for job in jobs { job.done.resume(returning: .failure(error)) }
            return
        }
        for (job, outcome) in zip(jobs, outcomes) { job.done.resume(returning: outcome) }
    }
}
