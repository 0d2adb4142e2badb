@testable import MatchcastService
import Synchronization
import Testing

/// `MatchGates`: one operation at a time per match, matches side by side, an exclusive entry apart from all.
@Suite("match gates")
struct MatchGatesTests {
    /// Records the order in which tasks got in, and how many were in at once.
    private final class Log: Sendable {
        private let state = Mutex<(entries: [String], inside: Set<String>, mostInside: Int)>(([], [], 0))
        func enter(_ name: String) {
            state.withLock {
                $0.entries.append(name)
                $0.inside.insert(name)
                $0.mostInside = max($0.mostInside, $0.inside.count)
            }
        }
        func leave(_ name: String) { state.withLock { _ = $0.inside.remove(name) } }
        var entries: [String] { state.withLock { $0.entries } }
        var inside: Set<String> { state.withLock { $0.inside } }
    }

    /// Starts a task that enters `matchId`'s gate (every match's, for nil), logs itself in, and stays in until
    /// `release` is called.
    private static func occupant(
        _ gates: MatchGates, _ matchId: String?, _ name: String, _ log: Log
    ) -> (task: Task<Void, Never>, release: @Sendable () -> Void) {
        let (stream, continuation) = AsyncStream<Void>.makeStream()
        let task = Task {
            if let matchId { await gates.enter(matchId) } else { await gates.enterAll() }
            log.enter(name)
            for await _ in stream { break }
            log.leave(name)
            if let matchId { gates.leave(matchId) } else { gates.leaveAll() }
        }
        return (task, { continuation.yield(); continuation.finish() })
    }

    private static func settle() async {
        for _ in 0..<50 { await Task.yield() }
        try? await Task.sleep(for: .milliseconds(20))
    }

    @Test("operations on one match run one at a time, in arrival order; other matches run beside them",
          .timeLimit(.minutes(1)))
    func oneAtATimePerMatch() async throws {
        let gates = MatchGates()
        let log = Log()
        let a1 = Self.occupant(gates, "a", "a1", log)
        await Self.settle()
        let a2 = Self.occupant(gates, "a", "a2", log)
        await Self.settle()
        let a3 = Self.occupant(gates, "a", "a3", log)
        await Self.settle()
        let b1 = Self.occupant(gates, "b", "b1", log)
        await Self.settle()
        #expect(log.inside == ["a1", "b1"], "b goes in beside a; a's later ones wait")
        a1.release()
        await a1.task.value
        await Self.settle()
        #expect(log.inside == ["a2", "b1"])
        a2.release()
        await a2.task.value
        await Self.settle()
        #expect(log.inside == ["a3", "b1"])
        a3.release()
        b1.release()
        for task in [a3.task, b1.task] { await task.value }
        #expect(log.entries.filter { $0.hasPrefix("a") } == ["a1", "a2", "a3"])
    }

    @Test("an exclusive entry waits for every match, keeps later ones out, and lets them in after it",
          .timeLimit(.minutes(1)))
    func exclusiveEntry() async throws {
        let gates = MatchGates()
        let log = Log()
        let a = Self.occupant(gates, "a", "a", log)
        let b = Self.occupant(gates, "b", "b", log)
        await Self.settle()
        let all = Self.occupant(gates, nil, "all", log)
        await Self.settle()
        // Arrived after the exclusive one: waits for it, although no operation on c runs.
        let c = Self.occupant(gates, "c", "c", log)
        await Self.settle()
        #expect(log.inside == ["a", "b"], "the exclusive entry waits for both matches; c waits behind it")
        a.release()
        await a.task.value
        await Self.settle()
        #expect(log.inside == ["b"], "still one match in")
        b.release()
        await b.task.value
        await Self.settle()
        #expect(log.inside == ["all"])
        all.release()
        await all.task.value
        await Self.settle()
        #expect(log.inside == ["c"])
        c.release()
        await c.task.value
        #expect(log.entries == ["a", "b", "all", "c"] || log.entries == ["b", "a", "all", "c"])
    }

    @Test("tryEnter goes in only where enter would not wait", .timeLimit(.minutes(1)))
    func tryEnterGoesInOnlyWhenFree() async throws {
        let gates = MatchGates()
        #expect(gates.tryEnter("a"))
        #expect(!gates.tryEnter("a"), "a is held")
        #expect(gates.tryEnter("b"), "b is free")
        let log = Log()
        let waiter = Self.occupant(gates, "a", "a2", log)
        await Self.settle()
        gates.leave("a")  // handed to the waiter
        await Self.settle()
        #expect(log.inside == ["a2"])
        #expect(!gates.tryEnter("a"), "held by the waiter")
        waiter.release()
        await waiter.task.value
        #expect(gates.tryEnter("a"))
        gates.leave("a")
        // An exclusive entry waiting for b keeps every match out, a free one too.
        let all = Self.occupant(gates, nil, "all", log)
        await Self.settle()
        #expect(!gates.tryEnter("c"), "an exclusive entry waits")
        gates.leave("b")
        await Self.settle()
        #expect(log.inside == ["all"])
        #expect(!gates.tryEnter("c"), "an exclusive entry runs")
        all.release()
        await all.task.value
        #expect(gates.tryEnter("c"))
        gates.leave("c")
    }

    @Test("an exclusive entry lets the operations queued on a match behind it in, in order, once it is done",
          .timeLimit(.minutes(1)))
    func queuedBehindExclusive() async throws {
        let gates = MatchGates()
        let log = Log()
        let a1 = Self.occupant(gates, "a", "a1", log)
        await Self.settle()
        let a2 = Self.occupant(gates, "a", "a2", log)  // queued on a
        await Self.settle()
        let all = Self.occupant(gates, nil, "all", log)
        await Self.settle()
        let a3 = Self.occupant(gates, "a", "a3", log)  // queued on a, after the exclusive one
        await Self.settle()
        a1.release()
        await a1.task.value
        await Self.settle()
        #expect(log.inside == ["all"], "a's next waits while an exclusive entry waits; the exclusive one goes in")
        all.release()
        await all.task.value
        await Self.settle()
        #expect(log.inside == ["a2"])
        a2.release()
        await a2.task.value
        await Self.settle()
        #expect(log.inside == ["a3"])
        a3.release()
        await a3.task.value
        #expect(log.entries == ["a1", "all", "a2", "a3"])
    }

    /// Who is inside which gate, counted by every task of `manyAtOnce`.
    private final class Tally: Sendable {
        private let state = Mutex<(inside: [String: Int], exclusive: Bool, clash: Bool, done: Int)>(([:], false, false, 0))
        func enter(_ matchId: String?) {
            state.withLock {
                if let matchId {
                    if $0.exclusive || $0.inside[matchId, default: 0] > 0 { $0.clash = true }
                    $0.inside[matchId, default: 0] += 1
                } else {
                    if $0.exclusive || $0.inside.values.contains(where: { $0 > 0 }) { $0.clash = true }
                    $0.exclusive = true
                }
            }
        }
        func leave(_ matchId: String?) {
            state.withLock {
                if let matchId { $0.inside[matchId, default: 0] -= 1 } else { $0.exclusive = false }
                $0.done += 1
            }
        }
        var clash: Bool { state.withLock { $0.clash } }
        var done: Int { state.withLock { $0.done } }
    }

    @Test("many operations on many matches: never two at once on one match nor beside an exclusive one; every one runs",
          .timeLimit(.minutes(1)))
    func manyAtOnce() async throws {
        let gates = MatchGates()
        let tally = Tally()
        await withTaskGroup(of: Void.self) { group in
            for n in 0..<2_000 {
                let matchId: String? = n % 500 == 499 ? nil : "m\(n % 7)"
                group.addTask {
                    if let matchId { await gates.enter(matchId) } else { await gates.enterAll() }
                    tally.enter(matchId)
                    await Task.yield()
                    tally.leave(matchId)
                    if let matchId { gates.leave(matchId) } else { gates.leaveAll() }
                }
            }
        }
        #expect(!tally.clash, "two operations on one match, or one beside an exclusive one")
        #expect(tally.done == 2_000)
    }
}
