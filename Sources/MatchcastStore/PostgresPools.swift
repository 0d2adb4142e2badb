import Logging
import PostgresNIO
import Synchronization

/// The store's connection pool, and a new one in its place once the server is back after it went away.
///
/// The pool is postgres-nio's, kept at a fixed size (`minimumConnections` = `maximumConnections`, see
/// `PostgresStore.init`). Such a pool traps (a failed precondition in postgres-nio 1.33's pool state machine) when,
/// after failed connection attempts, it gets its first connection back with several calls waiting, opens fewer
/// connections than its minimum, and is asked for one more: so a database that came back after an outage could take
/// serve down. A pool that lost the server is therefore never asked again: the store `retire`s it, keeps calls away
/// from it, and once a connection attempt outside the pool succeeds takes a new pool from `renewed()`. `run()` runs
/// every pool made, and shuts each one down when it is replaced.
final class PostgresPools: Sendable {
    private struct Generation: Sendable {
        let client: PostgresClient
        /// Opened when `run()` starts the pool.
        let started = Latch()
        /// Finished when the pool is replaced: its `run()` is then cancelled, which shuts it down.
        let replaced: AsyncStream<Void>
        let replace: AsyncStream<Void>.Continuation

        init(_ configuration: PostgresClient.Configuration, logger: Logger) {
            client = PostgresClient(configuration: configuration, backgroundLogger: logger)
            (replaced, replace) = AsyncStream<Void>.makeStream()
        }
    }

    private struct State {
        var current: Generation
        /// When the current pool lost the server (no call is to use it again); nil while it has not.
        var retiredAt: ContinuousClock.Instant?
    }

    private let configuration: PostgresClient.Configuration
    private let logger: Logger
    private let state: Mutex<State>
    /// Every pool made, the first included, for `run()` to run.
    private let made: AsyncStream<Generation>
    private let make: AsyncStream<Generation>.Continuation

    init(configuration: PostgresClient.Configuration, logger: Logger) {
        self.configuration = configuration
        self.logger = logger
        let first = Generation(configuration, logger: logger)
        state = Mutex(State(current: first))
        (made, make) = AsyncStream<Generation>.makeStream()
        make.yield(first)
    }

    /// The pool in use, retired or not.
    var client: PostgresClient { state.withLock { $0.current.client } }

    /// The pool in use; nil when it lost the server and no call may use it (`renewed()` then replaces it).
    var usable: PostgresClient? {
        state.withLock { $0.retiredAt == nil ? $0.current.client : nil }
    }

    /// When the pool in use lost the server; nil while it has not.
    var retiredAt: ContinuousClock.Instant? {
        state.withLock { $0.retiredAt }
    }

    /// Returns once `run()` has started the pool in use.
    func waitUntilRunning() async {
        await state.withLock { $0.current }.started.wait()
    }

    /// `client` lost the server (a call could not reach it, or the server said it is shutting down): when it is still
    /// the pool in use, no call uses it again. A pool already replaced is left as it is.
    func retire(_ client: PostgresClient) {
        let retired = state.withLock { state -> Bool in
            guard state.current.client === client, state.retiredAt == nil else { return false }
            state.retiredAt = .now
            return true
        }
        if retired { logger.notice("the connection pool lost PostgreSQL: a new one replaces it once it is back") }
    }

    /// The pool in use, or, when it was retired, a new one in its place, once `run()` has started it (the old one is
    /// shut down, failing what still waits on it). Only once the server can be reached again.
    func renewed() async -> PostgresClient {
        let (current, old) = state.withLock { state -> (Generation, Generation?) in
            guard state.retiredAt != nil else { return (state.current, nil) }
            let old = state.current
            state.current = Generation(configuration, logger: logger)
            state.retiredAt = nil
            make.yield(state.current)
            return (state.current, old)
        }
        if let old {
            old.replace.finish()
            logger.notice("a new connection pool replaces the one that lost PostgreSQL")
        }
        // A pool asked for a connection before it runs logs a warning (and waits for it).
        await current.started.wait()
        return current.client
    }

    /// Runs every pool: the first, and each that replaces another, each until it is replaced or this is cancelled.
    /// Called once, for as long as the store is used; returns once the pool in use has shut down. A replaced pool is
    /// not waited for: one that lost the server may never finish shutting down (a connection left backing off).
    func run() async {
        await withDiscardingTaskGroup { group in
            // Ends when this task is cancelled; the pools' tasks, cancelled with it, end too.
            for await generation in made {
                group.addTask {
                    // Not a child task: so that a replaced pool's shutdown is not waited for.
                    let running = Task {
                        generation.started.open()
                        await generation.client.run()
                    }
                    await withTaskCancellationHandler {
                        for await _ in generation.replaced {}
                    } onCancel: {
                        running.cancel()
                    }
                    running.cancel()
                    // The store is done with (not the pool replaced): its last pool shuts down before this returns.
                    if Task.isCancelled { await running.value }
                }
            }
        }
    }
}

/// Opens once; every task that waits on it, before or after, goes on then.
private final class Latch: Sendable {
    private struct State {
        var isOpen = false
        var waiters: [CheckedContinuation<Void, Never>] = []
    }

    private let state = Mutex(State())

    func open() {
        let waiters = state.withLock { state in
            state.isOpen = true
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.resume() }
    }

    func wait() async {
        await withCheckedContinuation { continuation in
            let isOpen = state.withLock { state in
                if !state.isOpen { state.waiters.append(continuation) }
                return state.isOpen
            }
            if isOpen { continuation.resume() }
        }
    }
}
