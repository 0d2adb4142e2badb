import Foundation
import MatchcastCore
import MatchcastDelivery
import MatchcastFeeds
import MatchcastService
import MatchcastTesting
import Synchronization
import Testing

@Suite("follow: one synthetic device from start to end")
struct FollowSessionTests {
    /// Wall time advancing with the manual clock, so timestamps and ids are reproducible.
    private static func wallClock(_ clock: ManualClock) -> @Sendable () -> Date {
        { Date(timeIntervalSince1970: 1_800_000_000 + clock.now.offset.seconds) }
    }

    /// Runs `follow` on the fake feed through the real poller, source and transport on a manual clock.
    private static func follow(_ matchId: String, speed: Double = 600, seed: UInt64 = 7) async throws -> CapturingSink {
        let clock = ManualClock()
        let sink = CapturingSink()
        let feed = try FakeFeed(seed: 3, speed: speed)
        let transport = FakeFeedTransport(feed: feed, clock: clock)
        let timing = PollTimingPolicy(defaultInterval: .milliseconds(20), minInterval: .milliseconds(20),
                                      maxInterval: .seconds(5), jitter: 0)
        let session = FollowSession(
            matchId: matchId, sink: sink, policy: ActivityPolicy(coalesceInterval: .zero),
            bundleId: "com.example.app", seed: seed, now: wallClock(clock), report: { _ in })
        let source = MatchSource(matchId: matchId, transport: transport, clock: clock, policy: timing, seed: 1,
                                 now: wallClock(clock))
        let poller = Poller(source: source, clock: clock) { result in try? await session.handle(result) }
        let done = Flag()
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                await poller.run()
                done.set()
            }
            // Drive virtual time: whenever the poller sleeps, jump to its deadline, until it stops on the final
            // snapshot. The driver waits for the sleep rather than spinning on yields, which on a loaded machine
            // took the cooperative threads from the poller it waited for.
            var rounds = 0
            while !done.isSet {
                guard await clock.waitForSleepers(count: 1, atMost: .milliseconds(100)),
                      let deadline = clock.nextDeadline else { continue }
                clock.advance(to: deadline)
                rounds += 1
                try #require(rounds < 200_000, "the match never ended")
            }
            try await group.waitForAll()
        }
        #expect(await session.isFinished)
        return sink
    }

    @Test("cricket-t20: start to push-to-start, updates to the update token, end last", .timeLimit(.minutes(1)))
    func cricketLifecycle() async throws {
        let sink = try await Self.follow("cricket-t20")
        let deliveries = sink.deliveries
        let first = try #require(deliveries.first)
        let last = try #require(deliveries.last)
        #expect(first.payload.aps.event == .start)
        #expect(first.target.kind == .pushToStartToken)
        #expect(first.payload.aps.attributes?.activityId == first.activityId)
        #expect(last.payload.aps.event == .end)
        #expect(last.payload.aps.dismissalDate != nil)
        #expect(last.payload.aps.contentState.result?.contains("won") == true)
        let middle = deliveries.dropFirst().dropLast()
        #expect(middle.count > 100, "a T20 has far more than 100 changes")
        #expect(middle.allSatisfy { $0.payload.aps.event == .update && $0.target.kind == .updateToken })
        #expect(Set(deliveries.map(\.activityId)).count == 1)
        #expect(Set(deliveries.map(\.id)).count == deliveries.count)
        let stamps = deliveries.map(\.payload.aps.timestamp)
        #expect(zip(stamps, stamps.dropFirst()).allSatisfy { $0 < $1 }, "timestamp strictly grows")
        #expect(deliveries.allSatisfy { $0.payload.bytes.count <= 4096 })
        // Key events go at priority 10 with an alert up to the hourly ceiling, past it at 5 with their alert; routine
        // changes at 5 without. The whole match runs within a minute of the wall clock, so within one hour: the start
        // (kick-off's push) and the key events at 10 are at most the ceiling together.
        let updates = Array(middle)
        #expect(updates.contains { $0.apns.priority == 10 && $0.payload.aps.alert != nil })
        #expect(updates.contains { $0.apns.priority == 5 && $0.payload.aps.alert == nil })
        #expect(updates.allSatisfy { $0.apns.priority == 5 || $0.payload.aps.alert != nil })
        let high = deliveries.dropLast().filter { $0.apns.priority == 10 }
        #expect(high.count == ActivityPolicy.defaultHighPriorityPerHour, "a T20 has more key events than the ceiling")
        #expect(updates.contains { $0.apns.priority == 5 && $0.payload.aps.alert != nil }, "past the ceiling: at 5")
        // A routine update always changes what the device shows.
        for (a, b) in zip(updates, updates.dropFirst()) where b.apns.priority == 5 {
            #expect(a.payload.aps.contentState != b.payload.aps.contentState)
        }
    }

    @Test("tennis and football reach their end too", .timeLimit(.minutes(1)), arguments: ["tennis-bo3", "football"])
    func otherScenarios(matchId: String) async throws {
        let sink = try await Self.follow(matchId)
        #expect(sink.deliveries.first?.payload.aps.event == .start)
        #expect(sink.deliveries.last?.payload.aps.event == .end)
        #expect(sink.deliveries.filter { $0.payload.aps.event == .end }.count == 1)
    }

    @Test("the same seed gives the same bytes", .timeLimit(.minutes(1)))
    func reproducible() async throws {
        let a = try await Self.follow("football", seed: 11)
        let b = try await Self.follow("football", seed: 11)
        #expect(!a.ndjson.isEmpty)
        #expect(a.ndjson == b.ndjson)
    }

    /// `cancelled`: the start's send fails with `CancellationError` once released, as a Ctrl-C cancels a request APNs
    /// may have taken already; otherwise it succeeds, after the stop has had time to run ahead of it if it could.
    @Test("Ctrl-C while the start is on its way still ends the activity on its channel, also when it cancels the send",
          .timeLimit(.minutes(1)), arguments: [false, true])
    func stopWhileTheStartIsOnItsWay(cancelled: Bool) async throws {
        let sink = HoldingSink(failsHeld: cancelled)
        let session = FollowSession(
            matchId: "m", sink: sink, policy: ActivityPolicy(), bundleId: "b", seed: 1, route: .channel("chan-1"),
            report: { _ in })
        let live = PollResult(outcome: MatchPollOutcome.updated(ManagerFixtures.football("m", seq: 1)), delay: .seconds(5))
        let handling = Task { try await session.handle(live) }
        await sink.waitForFirstDelivery()
        let stopping = Task { try await session.stop() }
        try await Task.sleep(for: .milliseconds(200))  // time for a stop that does not wait to end nothing
        sink.release()
        if cancelled {
            await #expect(throws: CancellationError.self) { try await handling.value }
        } else {
            try await handling.value
        }
        try await stopping.value
        let sent = sink.deliveries.map { "\($0.payload.aps.event) \($0.target.kind)" }
        #expect(sent == ["start pushToStartToken", "end channel"])
        #expect(await session.isDone)
    }

    @Test("a feed that fails is reported and retried, not fatal", .timeLimit(.minutes(1)))
    func failingFeedIsReported() async throws {
        struct Refusing: FeedTransport {
            struct Refused: Error {}
            func fetch(_ request: FeedRequest) async throws -> FeedResponse { throw Refused() }
        }
        let clock = ManualClock()
        let reports = CapturedLines()
        let session = FollowSession(
            matchId: "m", sink: CapturingSink(), policy: ActivityPolicy(), bundleId: "b", seed: 1,
            now: Self.wallClock(clock), report: { reports.append($0) })
        let source = MatchSource(matchId: "m", transport: Refusing(), clock: clock,
                                 policy: PollTimingPolicy(backoffBase: .seconds(1), backoffCap: .seconds(4)), seed: 1)
        let poller = Poller(source: source, clock: clock) { result in try? await session.handle(result) }
        let task = Task { await poller.run() }
        for _ in 0..<3 {
            await clock.waitForSleepers(count: 1)
            clock.advance(to: clock.nextDeadline!)
        }
        await clock.waitForSleepers(count: 1)
        task.cancel()
        await task.value
        #expect(reports.lines.count >= 3)
        #expect(reports.lines.allSatisfy { $0.hasPrefix("feed: ") && $0.contains("retrying in") })
    }
}

/// Lines collected from a `@Sendable` callback.
final class CapturedLines: Sendable {
    private let storage = Synchronization.Mutex<[String]>([])
    func append(_ line: String) { storage.withLock { $0.append(line) } }
    var lines: [String] { storage.withLock { $0 } }
}

/// A sink that keeps its first delivery waiting until released, and says when it has it; with `failsHeld`, what it
/// held fails when released, as a send cancelled after the server took it.
final class HoldingSink: DeliverySink, Sendable {
    let name = "holding"
    private let failsHeld: Bool
    private struct State {
        var deliveries: [Delivery] = []
        var released = false
        var arrived: [CheckedContinuation<Void, Never>] = []
        var held: [CheckedContinuation<Void, Never>] = []
    }
    private let state = Synchronization.Mutex(State())

    init(failsHeld: Bool = false) {
        self.failsHeld = failsHeld
    }

    func deliver(_ batch: [Delivery]) async throws {
        let arrived = state.withLock { state in
            state.deliveries += batch
            defer { state.arrived = [] }
            return state.arrived
        }
        for waiter in arrived { waiter.resume() }
        var wasHeld = false
        await withCheckedContinuation { continuation in
            let go = state.withLock { state in
                if !state.released { state.held.append(continuation) }
                return state.released
            }
            wasHeld = !go
            if go { continuation.resume() }
        }
        if failsHeld, wasHeld { throw CancellationError() }
    }

    func waitForFirstDelivery() async {
        await withCheckedContinuation { continuation in
            let arrived = state.withLock { state in
                if state.deliveries.isEmpty { state.arrived.append(continuation) }
                return !state.deliveries.isEmpty
            }
            if arrived { continuation.resume() }
        }
    }

    func release() {
        let held = state.withLock { state in
            state.released = true
            defer { state.held = [] }
            return state.held
        }
        for waiter in held { waiter.resume() }
    }

    var deliveries: [Delivery] { state.withLock { $0.deliveries } }
}

/// A one-way flag shared with a child task.
final class Flag: Sendable {
    private let value = Synchronization.Mutex(false)
    func set() { value.withLock { $0 = true } }
    var isSet: Bool { value.withLock { $0 } }
}
