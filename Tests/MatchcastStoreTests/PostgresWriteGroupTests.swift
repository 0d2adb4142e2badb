import Synchronization
@testable import MatchcastStore
import Testing

/// How small PostgreSQL writes of one kind are sent together (`PostgresWriteGroup`), without a database: what each
/// caller is told to do, and what the leader's call receives.
@Suite("PostgreSQL write groups")
struct PostgresWriteGroupTests {
    /// What the leaders' calls received.
    final class Calls: Sendable {
        private let groups = Mutex<[[Int]]>([])
        var received: [[Int]] { groups.withLock { $0 } }

        func record(_ items: [Int]) { groups.withLock { $0.append(items) } }
    }

    /// A run that records its items and fails the odd ones.
    static func oddFails(_ calls: Calls) -> PostgresWriteGroup<Int>.Run {
        { items async throws(StoreError) in
            calls.record(items)
            return items.map { $0 % 2 == 1 ? .failure(.conflict("odd \($0)")) : .success(()) }
        }
    }

    /// What a caller ends with: "alone", "ok" or the error's message.
    static func outcome(_ turn: PostgresWriteGroup<Int>.Turn) -> String {
        switch turn {
        case .alone: "alone"
        case .done(.success): "ok"
        case .done(.failure(let error)): error.message
        }
    }

    /// A group that has just seen a write begin: busy of late, so a write that may wait does.
    static func busyGroup(linger: Duration) async -> PostgresWriteGroup<Int> {
        let group = PostgresWriteGroup<Int>(linger: linger)
        let first = await group.turn(for: 0, mayWait: false, run: oddFails(Calls()))
        #expect(outcome(first) == "alone")
        return group
    }

    @Test("writes that may wait, soon after one began, go in one call and each gets its own outcome")
    func writesThatMayWaitGoTogether() async throws {
        // Long enough that the five arrive within it, and within twice it of the first write, on a loaded machine (a
        // test run beside a build once took more than 4 s to get from the first write to the five).
        let group = await Self.busyGroup(linger: .seconds(4))
        let calls = Calls()
        let started = ContinuousClock.now
        let outcomes = await withTaskGroup(of: (Int, String).self) { tasks in
            for item in 1...5 {
                tasks.addTask { (item, Self.outcome(await group.turn(for: item, mayWait: true, run: Self.oddFails(calls)))) }
            }
            var outcomes: [Int: String] = [:]
            for await (item, outcome) in tasks { outcomes[item] = outcome }
            return outcomes
        }
        #expect(ContinuousClock.now - started >= .milliseconds(3900), "the leader waited the linger")
        #expect(calls.received.count == 1)
        #expect(calls.received.first?.sorted() == [1, 2, 3, 4, 5])
        #expect(outcomes == [1: "odd 1", 2: "ok", 3: "odd 3", 4: "ok", 5: "odd 5"])
        #expect(group.groupedCalls == 1)
        #expect(group.itemsSentGrouped == 5)
    }

    @Test("a write that may not wait goes alone at once, even while others gather")
    func aWriteThatMayNotWaitGoesAlone() async throws {
        // The bound is half the linger, wide enough for a loaded machine.
        let group = await Self.busyGroup(linger: .seconds(6))
        let calls = Calls()
        let waiting = Task { Self.outcome(await group.turn(for: 2, mayWait: true, run: Self.oddFails(calls))) }
        let started = ContinuousClock.now
        #expect(Self.outcome(await group.turn(for: 4, mayWait: false, run: Self.oddFails(calls))) == "alone")
        #expect(ContinuousClock.now - started < .seconds(3))
        // The leader found nobody to send with: it goes alone too, without a call.
        #expect(await waiting.value == "alone")
        #expect(calls.received.isEmpty)
    }

    @Test("a write that may wait but that an API request waits for (StoreWrites.callerWaits) goes alone at once, however busy")
    func aWriteACallerWaitsForGoesAlone() async throws {
        let group = await Self.busyGroup(linger: .seconds(30))
        let started = ContinuousClock.now
        let turn = await StoreWrites.$callerWaits.withValue(true) {
            await group.turn(for: 2, mayWait: true, run: Self.oddFails(Calls()))
        }
        #expect(Self.outcome(turn) == "alone")
        #expect(ContinuousClock.now - started < .seconds(15), "it did not wait out the 30 s linger")
        #expect(group.groupedCalls == 0)
        // Outside a request the same write, just as soon after, leads a group and waits (it finds nobody to join it).
        let finished = Mutex(false)
        let waiting = Task {
            let outcome = Self.outcome(await group.turn(for: 4, mayWait: true, run: Self.oddFails(Calls())))
            finished.withLock { $0 = true }
            return outcome
        }
        try await Task.sleep(for: .milliseconds(300))
        #expect(!finished.withLock { $0 }, "a write that may wait lingers when nobody waits for it")
        waiting.cancel()  // its linger ends: it goes alone
        #expect(await waiting.value == "alone")
    }

    @Test("a write that may wait, when none of its kind began of late, goes alone at once")
    func aWriteOnAnIdleGroupGoesAlone() async {
        let group = PostgresWriteGroup<Int>(linger: .seconds(30))
        let started = ContinuousClock.now
        #expect(Self.outcome(await group.turn(for: 2, mayWait: true, run: Self.oddFails(Calls()))) == "alone")
        #expect(ContinuousClock.now - started < .seconds(15))
        #expect(group.groupedCalls == 0)
    }

    @Test("when the call fails as a whole, every caller goes alone")
    func aFailedCallSendsEveryoneAlone() async {
        let group = await Self.busyGroup(linger: .seconds(2))
        let failing: PostgresWriteGroup<Int>.Run = { _ async throws(StoreError) in throw .database("connection lost") }
        let outcomes = await withTaskGroup(of: String.self) { tasks in
            for item in 1...4 { tasks.addTask { Self.outcome(await group.turn(for: item, mayWait: true, run: failing)) } }
            var outcomes: [String] = []
            for await outcome in tasks { outcomes.append(outcome) }
            return outcomes
        }
        #expect(outcomes == ["alone", "alone", "alone", "alone"])
        #expect(group.groupedCalls == 1)
    }

    @Test("a call that gives the wrong number of outcomes sends everyone alone")
    func aShortAnswerSendsEveryoneAlone() async {
        let group = await Self.busyGroup(linger: .seconds(2))
        let short: PostgresWriteGroup<Int>.Run = { _ async throws(StoreError) in [.success(())] }
        let outcomes = await withTaskGroup(of: String.self) { tasks in
            for item in 1...3 { tasks.addTask { Self.outcome(await group.turn(for: item, mayWait: true, run: short)) } }
            var outcomes: [String] = []
            for await outcome in tasks { outcomes.append(outcome) }
            return outcomes
        }
        #expect(outcomes == ["alone", "alone", "alone"])
    }

    @Test("a group takes at most its limit; the writes beyond it go alone")
    func aFullGroupSendsTheRestAlone() async {
        let group = PostgresWriteGroup<Int>(linger: .seconds(2), limit: 3)
        _ = await group.turn(for: 0, mayWait: false, run: Self.oddFails(Calls()))
        let calls = Calls()
        let outcomes = await withTaskGroup(of: String.self) { tasks in
            for item in [2, 4, 6, 8, 10, 12] {
                tasks.addTask { Self.outcome(await group.turn(for: item, mayWait: true, run: Self.oddFails(calls))) }
            }
            var outcomes: [String] = []
            for await outcome in tasks { outcomes.append(outcome) }
            return outcomes.sorted()
        }
        // One leader and the two who joined it (the limit counts the leader), three alone.
        #expect(calls.received.count == 1)
        #expect(calls.received.first?.count == 3)
        #expect(outcomes == ["alone", "alone", "alone", "ok", "ok", "ok"])
    }
}
