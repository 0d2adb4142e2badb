import Foundation
import Logging
import Synchronization

/// Whether the PostgreSQL server can be reached, as the store last found out: lets a call fail within about a second
/// when the server is away, where it would otherwise wait the whole `leaseTimeout` for a pooled connection that the
/// pool keeps failing to make (an API call answered 503 after 30 s is as good as no answer to an app).
///
/// A call that has waited `patience` for a connection asks `check`: one connection attempt outside the pool, shared
/// by every call that asks while it runs and trusted for `patience` after. Unreachable: the call fails now. Reachable:
/// the pool is only busy, and the call waits on up to `leaseTimeout`. Once the server was found unreachable, calls
/// ask after `patienceWhileDown` instead, until a call gets a connection again.
final class PostgresReachability: Sendable {
    /// How long a call waits for a pooled connection before the server is checked.
    let patience: Duration
    /// The same while the server was last found unreachable.
    let patienceWhileDown: Duration
    private let down = Atomic<Bool>(false)
    private let state = Mutex(State())
    private let logger: Logger
    private let endpoint: String

    private struct State {
        var running: Task<String?, Never>?
        /// When the running check began.
        var runningSince: ContinuousClock.Instant?
        /// When the last check ended, and when it began.
        var checkedAt: ContinuousClock.Instant?
        var lastBegan: ContinuousClock.Instant?
        /// Why the server could not be reached at the last check; nil: it could.
        var problem: String?
    }

    init(endpoint: String, logger: Logger, patience: Duration = .seconds(1), patienceWhileDown: Duration = .milliseconds(100)) {
        self.endpoint = endpoint
        self.logger = logger
        self.patience = patience
        self.patienceWhileDown = patienceWhileDown
    }

    /// How long a call starting now waits for a connection before asking `check`.
    var currentPatience: Duration { down.load(ordering: .relaxed) ? patienceWhileDown : patience }

    /// A call got its connection: the server is there.
    func reached() {
        guard down.load(ordering: .relaxed) else { return }
        if down.exchange(false, ordering: .relaxed) {
            logger.notice("PostgreSQL can be reached again", metadata: ["endpoint": "\(endpoint)"])
        }
    }

    /// Why the server cannot be reached, or nil when it can: from the last check when it is younger than `patience`,
    /// from the check running when there is one, else from a new one (`attempt` throws when it cannot connect). With
    /// `startedAfter`, only a check that began then or later answers: a connection made before the server was lost
    /// says nothing about whether it is back.
    func check(startedAfter earliest: ContinuousClock.Instant? = nil,
               _ attempt: @escaping @Sendable () async throws -> Void) async -> String? {
        let task = state.withLock { state -> Task<String?, Never>? in
            let now = ContinuousClock.now
            func recentEnough(_ began: ContinuousClock.Instant?) -> Bool {
                guard let earliest else { return true }
                return began.map { $0 >= earliest } ?? false
            }
            if let running = state.running, recentEnough(state.runningSince) { return running }
            if let checkedAt = state.checkedAt, now - checkedAt < patience, recentEnough(state.lastBegan) { return nil }
            let running = Task<String?, Never> {
                do {
                    try await attempt()
                    return nil
                } catch {
                    return "\(error)"
                }
            }
            state.running = running
            state.runningSince = now
            return running
        }
        guard let task else { return state.withLock { $0.problem } }
        let problem = await task.value
        state.withLock { state in
            guard state.running == task else { return }
            state.running = nil
            state.checkedAt = .now
            state.lastBegan = state.runningSince
            state.problem = problem
        }
        if let problem {
            if !down.exchange(true, ordering: .relaxed) {
                logger.error("PostgreSQL cannot be reached", metadata: ["endpoint": "\(endpoint)", "error": "\(problem)"])
            }
        } else {
            reached()
        }
        return problem
    }
}
