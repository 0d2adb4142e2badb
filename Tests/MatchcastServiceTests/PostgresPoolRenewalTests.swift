import Foundation
import MatchcastStore
import MatchcastTesting
import PostgresNIO
import Synchronization
import Testing

/// A `PostgresStore` on a PostgreSQL server of the test's own (`Scripts/postgres` with a folder of its own), called
/// from many tasks at once while the server stops and comes back (`Scripts/postgres pause`, `resume`): calls fail
/// fast meanwhile, a new connection pool replaces the one that lost the server once it is back, and calls that
/// keep coming at the moment it returns are served, and no call waits forever on a connection that closed under it.
/// (The fixed pool that lost the server is never asked again: asked
/// for a connection after recovering below its minimum size, postgres-nio's pool traps and takes the process down.)
@Suite("PostgreSQL's connection pool after an outage", .serialized)
struct PostgresPoolRenewalTests {
    /// Tasks calling the store at once, a call after the other.
    static let callers = 32

    @Test(
        "calls from many tasks across an outage: fail fast while it lasts, a new pool once the server is back",
        .enabled(if: ScratchPostgresDatabase.isConfigured, ScratchPostgresDatabase.skipMessage),
        .timeLimit(.minutes(5)))
    func poolRenewedAfterOutage() async throws {
        let cluster = URL(fileURLWithPath: "/tmp/matchcast-pool-\(UInt32.random(in: 0...UInt32.max))")
        let url = try await PostgresScript.run("start", folder: cluster)
        do {
            var configuration = try #require(try StoreURL(url).postgresConfiguration)
            configuration.maximumConnections = 8  // fewer connections than callers: calls wait in the pool's queue
            let store = try await PostgresStore.open(configuration)
            try await withStoreRunning(store) {
                try await store.createDevice(DeviceRecord(id: "before", secretHash: "aa", createdAt: Date()))
                let first = store.client
                let calls = CallCounts()
                let callers = Self.startCallers(store, counting: calls)
                defer { Self.stop(callers) }
                try await #require(eventually(within: 30, every: .milliseconds(20)) { calls.successes > 100 })

                try await PostgresScript.run("pause", folder: cluster)
                let pausedAt = ContinuousClock.now
                try await #require(eventually(within: 30, every: .milliseconds(20)) { calls.failures > 100 },
                                   "calls fail while the server is away")
                try await Task.sleep(for: .seconds(3))
                #expect(store.client === first, "no new pool while the server is away")
                let failuresWhileAway = calls.failures
                let resumedAt = ContinuousClock.now
                try await PostgresScript.run("resume", folder: cluster)

                // The callers never stop: the server comes back under load.
                try await #require(eventually(within: 60, every: .milliseconds(20)) {
                    calls.lastSuccess.map { $0 > resumedAt } ?? false
                }, "calls succeed again once the server is back")
                let backAt = ContinuousClock.now
                try await Task.sleep(for: .seconds(2))
                let failuresBack = calls.failures
                try await Task.sleep(for: .seconds(2))
                #expect(calls.failures == failuresBack, "calls fail after the server came back")
                #expect(store.client !== first, "a new pool replaced the one that lost the server")
                #expect(calls.slowestFailure < .seconds(10), "a call while the server was away took \(calls.slowestFailure)")
                Self.stop(callers)
                _ = try await eventually(within: 10, every: .milliseconds(50)) { calls.inFlight(since: pausedAt).isEmpty }
                let stuck = calls.inFlight(since: pausedAt)
                print("pool-renewal: \(Self.callers) callers; \(failuresWhileAway) calls failed in the \(resumedAt - pausedAt) "
                    + "outage, the slowest after \(calls.slowestFailure); served again \(backAt - resumedAt) after the "
                    + "server came back; \(calls.successes) calls served in all; \(stuck.count) never returned")
                // postgres-nio: a query under way when the server shuts down can wait forever on its closed connection;
                // the store gives up on it once it has seen the connection closed (`withConnection`).
                #expect(stuck.isEmpty, "\(stuck.count) calls started before the outage never returned")
                let census = try await store.census()
                #expect(census.devices == 1, "the device written before the outage is still there")
            }
        } catch {
            _ = try? await PostgresScript.run("stop", folder: cluster)
            throw error
        }
        try await PostgresScript.run("stop", folder: cluster)
    }

    /// `callers` tasks calling `store` one call after the other until cancelled. Not child tasks: a call that never
    /// returns (see the test) must not hold the test up.
    static func startCallers(_ store: PostgresStore, counting calls: CallCounts) -> [Task<Void, Never>] {
        (0..<callers).map { caller in
            Task {
                while !Task.isCancelled {
                    calls.started(caller)
                    do {
                        _ = try await store.census()
                        calls.succeeded(caller)
                    } catch {
                        calls.failed(caller)
                        try? await Task.sleep(for: .milliseconds(10))  // a client's pause before it retries
                    }
                }
            }
        }
    }

    static func stop(_ callers: [Task<Void, Never>]) {
        for caller in callers { caller.cancel() }
    }
}

/// What the callers of `poolRenewedAfterOutage` saw.
final class CallCounts: Sendable {
    private struct Counts {
        var successes = 0
        var failures = 0
        var lastSuccess: ContinuousClock.Instant?
        var slowestFailure = Duration.zero
        /// When each caller's call under way started.
        var underWay: [Int: ContinuousClock.Instant] = [:]
    }

    private let counts = Mutex(Counts())

    func started(_ caller: Int) {
        counts.withLock { $0.underWay[caller] = .now }
    }

    func succeeded(_ caller: Int) {
        counts.withLock {
            $0.successes += 1
            $0.lastSuccess = .now
            $0.underWay[caller] = nil
        }
    }

    func failed(_ caller: Int) {
        counts.withLock {
            $0.failures += 1
            if let started = $0.underWay.removeValue(forKey: caller) {
                $0.slowestFailure = max($0.slowestFailure, .now - started)
            }
        }
    }

    /// The callers whose call under way started before `instant`.
    func inFlight(since instant: ContinuousClock.Instant) -> [Int] {
        counts.withLock { $0.underWay.filter { $0.value < instant }.map(\.key) }
    }

    var successes: Int { counts.withLock { $0.successes } }
    var failures: Int { counts.withLock { $0.failures } }
    var lastSuccess: ContinuousClock.Instant? { counts.withLock { $0.lastSuccess } }
    var slowestFailure: Duration { counts.withLock { $0.slowestFailure } }
}
