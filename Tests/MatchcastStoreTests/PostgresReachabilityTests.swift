import Logging
@testable import MatchcastStore
import Synchronization
import Testing

/// `PostgresReachability` shares one connection attempt between the calls that ask while it runs and trusts its answer
/// for a while; a call that lost the server asks only of an attempt begun after the loss.
@Suite("PostgreSQL reachability checks")
struct PostgresReachabilityTests {
    private static func reachability(patience: Duration = .seconds(60)) -> PostgresReachability {
        PostgresReachability(
            endpoint: "test", logger: Logger(label: "reachability-test", factory: { _ in SwiftLogNoOpLogHandler() }),
            patience: patience)
    }

    @Test("a check's answer is trusted for its patience, and shared with the calls that ask while it runs")
    func answersAreSharedAndTrusted() async {
        let reachability = Self.reachability()
        let attempts = Counter()
        let gate = AsyncStream<Void>.makeStream()
        let running = AsyncStream<Void>.makeStream()
        // Two calls ask while one attempt, held open, runs.
        async let first = reachability.check {
            attempts.add()
            running.continuation.finish()
            for await _ in gate.stream {}
        }
        for await _ in running.stream {}
        async let second = reachability.check { attempts.add() }
        gate.continuation.finish()
        #expect(await first == nil)
        #expect(await second == nil)
        #expect(attempts.count == 1)
        // Answered from the last check, which is younger than its patience.
        #expect(await reachability.check { attempts.add() } == nil)
        #expect(attempts.count == 1)
    }

    @Test("an answer older than the loss of the server is not trusted: a new attempt is made, and its failure counts")
    func aLossNeedsAnAttemptBegunAfterIt() async {
        struct Refused: Error {}
        let reachability = Self.reachability()
        let attempts = Counter()
        #expect(await reachability.check { attempts.add() } == nil)
        let lost = ContinuousClock.now
        // Without the loss, the reachable answer still holds; with it, a new attempt is made, and it fails.
        #expect(await reachability.check { attempts.add() } == nil)
        #expect(attempts.count == 1)
        let problem = await reachability.check(startedAfter: lost) {
            attempts.add()
            throw Refused()
        }
        #expect(problem?.contains("Refused") == true, "\(problem ?? "nil")")
        #expect(attempts.count == 2)
        // That attempt began after the loss: its answer now serves the calls that ask about it.
        #expect(await reachability.check(startedAfter: lost) { attempts.add() } != nil)
        #expect(attempts.count == 2)
    }

    @Test("an attempt under way since before the loss is not waited for: one begun after it answers")
    func aRunningAttemptFromBeforeTheLossIsNotShared() async {
        struct Refused: Error {}
        let reachability = Self.reachability()
        let gate = AsyncStream<Void>.makeStream()
        let running = AsyncStream<Void>.makeStream()
        // An attempt that began while the server was there, and connects only later.
        async let before = reachability.check {
            running.continuation.finish()
            for await _ in gate.stream {}
        }
        for await _ in running.stream {}
        let lost = ContinuousClock.now
        let after = await reachability.check(startedAfter: lost) { throw Refused() }
        #expect(after != nil, "the attempt begun after the loss failed")
        gate.continuation.finish()
        #expect(await before == nil)
    }
}

/// Attempts made, shared with the attempts' tasks.
private final class Counter: Sendable {
    private let value = Atomic<Int>(0)
    func add() { value.add(1, ordering: .relaxed) }
    var count: Int { value.load(ordering: .relaxed) }
}
