import Foundation
import Logging
import MatchcastCore
import MatchcastDelivery
import MatchcastService
import MatchcastStore
import MatchcastTesting
import Testing

/// Deliveries and waiting for the relay tests.
private enum RelayFixture {
    static let logger = Logger(label: "test.relay", factory: { _ in SwiftLogNoOpLogHandler() })
    /// Quick retries, so a recovered sink is noticed within milliseconds.
    static let quick = RetryPolicy(initialBackoff: .milliseconds(5), maxBackoff: .milliseconds(20))

    static func delivery(_ id: String, activity: String, _ event: ActivityEvent, timestamp: Int = 1_800_000_000) -> Delivery {
        let state = ContentState(
            status: "live", statusText: "Live", home: .init(name: "MUN", score: "\(timestamp % 7)"),
            away: .init(name: "LIV", score: "1"), summary: "MUN v LIV")
        let aps = event == .end
            ? APS(timestamp: timestamp, event: .end, contentState: state, dismissalDate: timestamp + 900)
            : APS(timestamp: timestamp, event: event, contentState: state, staleDate: timestamp + 300)
        return Delivery(
            id: id, matchId: "football", activityId: activity,
            target: PushTarget(kind: event == .start ? .pushToStartToken : .updateToken, value: String(repeating: "ab", count: 32)),
            apns: APNsHeaders(topic: "com.example.app.push-type.liveactivity", priority: 10, expiration: timestamp + 3600),
            payload: try! PushPayload(aps))
    }

    static func relay(
        _ store: any MatchcastStore, _ sinks: [any DeliverySink], mode: DeliveryRelay.Mode,
        maxStarts: Int = DeliveryRelay.defaultMaxStarts
    ) -> DeliveryRelay {
        let metrics = BrokerMetrics()
        return DeliveryRelay(
            store: store, dispatcher: DeliveryDispatcher(sinks: sinks, metrics: metrics, logger: logger), mode: mode,
            metrics: metrics, backoff: quick, maxStarts: maxStarts, logger: logger)
    }

    /// Saves to the outbox, then submits, as `LifecycleManager` does.
    static func queue(_ deliveries: [Delivery], _ store: any MatchcastStore, _ relay: DeliveryRelay) async throws {
        try await store.saveActivities([], enqueue: deliveries)
        await relay.submit(deliveries)
    }
}

private typealias F = RelayFixture

@Suite("Delivery relay: the outbox to the sinks")
struct DeliveryRelayTests {
    @Test func inlineDeliversBeforeSubmitReturnsAndEmptiesTheOutbox() async throws {
        let store = InMemoryStore()
        let sink = CapturingSink()
        let relay = F.relay(store, [sink], mode: .inline)
        let batch = [F.delivery("d1", activity: "a1", .start), F.delivery("d2", activity: "a2", .update)]
        try await F.queue(batch, store, relay)

        #expect(sink.deliveries == batch)
        #expect(await store.queuedDeliveryCount() == 0)
    }

    @Test func aStartLeavesTheOutboxBeforeItIsSentOthersOnlyAfter() async throws {
        let store = InMemoryStore()
        // A sink that looks at the outbox while it is being handed the batch.
        let seen = ObservingSink { _ in await store.queuedDeliveries(limit: 10).map(\.id) }
        let relay = F.relay(store, [seen], mode: .inline)
        try await F.queue([F.delivery("s1", activity: "a1", .start), F.delivery("u1", activity: "a2", .update)], store, relay)

        #expect(seen.observations == [["u1"]])
        #expect(await store.queuedDeliveryCount() == 0)
    }

    @Test("a kick-off's starts leave the outbox a sink request's worth at a time, so a crash mid-send loses few")
    func startsLeaveTheOutboxABatchAtATime() async throws {
        let store = InMemoryStore()
        // What is still queued each time the sink is handed a batch.
        let seen = ObservingSink { _ in await store.queuedDeliveries(limit: 100).map(\.id) }
        let relay = F.relay(store, [seen], mode: .background, maxStarts: 3)
        let starts = (1...8).map { F.delivery("s\($0)", activity: "a\($0)", .start) }
        // Queued before the relay runs, as serve's kick-off piles up behind a slow sink.
        try await F.queue(starts + [F.delivery("u1", activity: "a1", .update)], store, relay)
        let running = Task { try await relay.run() }
        defer { running.cancel() }
        let drained = try await eventually { await store.queuedDeliveryCount() == 0 }
        #expect(drained)

        // Three, three, then the last two with the update: the starts of later batches stay queued meanwhile.
        #expect(seen.observations == [["s4", "s5", "s6", "s7", "s8", "u1"], ["s7", "s8", "u1"], ["u1"]])
    }

    @Test func itHoldsATargetFromSubmitUntilEverySinkTookIt() async throws {
        let store = InMemoryStore(keepsOutbox: false)
        let flaky = FlakySink(name: "flaky")
        let relay = F.relay(store, [flaky, CapturingSink()], mode: .background)
        let batch = [F.delivery("u1", activity: "a1", .update)]
        let target = batch[0].target
        await relay.submit(batch)
        #expect(await relay.holds(target), "queued, the relay not running yet")
        #expect(await !relay.holds(PushTarget(kind: .updateToken, value: String(repeating: "cd", count: 32))))

        flaky.isDown = true
        let running = Task { try await relay.run() }
        defer { running.cancel() }
        #expect(try await eventually { flaky.attempts >= 2 })
        #expect(await relay.holds(target), "taken, and refused by one sink")
        flaky.isDown = false
        #expect(try await eventually { await !relay.holds(target) })
        #expect(flaky.deliveries.map(\.id) == ["u1"])
    }

    @Test func aFailingSinkIsRetriedAndMeanwhileUpdatesCollapseToTheNewest() async throws {
        let store = InMemoryStore()
        let flaky = FlakySink(name: "flaky")
        let healthy = CapturingSink()
        let relay = F.relay(store, [flaky, healthy], mode: .background)
        flaky.isDown = true
        let running = Task { try await relay.run() }
        defer { running.cancel() }

        let first = [F.delivery("u1", activity: "a1", .update, timestamp: 1), F.delivery("e2", activity: "a2", .end)]
        try await F.queue(first, store, relay)
        #expect(try await eventually { flaky.attempts >= 3 })
        // While the flaky sink is down: two more updates of a1; only the newest may go out.
        try await F.queue([F.delivery("u2", activity: "a1", .update, timestamp: 2)], store, relay)
        try await F.queue([F.delivery("u3", activity: "a1", .update, timestamp: 3)], store, relay)
        #expect(await store.queuedDeliveries(limit: 10).map(\.id) == ["e2", "u3"])

        flaky.isDown = false
        #expect(try await eventually { flaky.deliveries.count == 3 })
        #expect(flaky.deliveries.map(\.id) == ["u1", "e2", "u3"])
        // The healthy sink had the first batch once, not once per retry.
        #expect(try await eventually { healthy.deliveries.count == 3 })
        #expect(healthy.deliveries.map(\.id) == ["u1", "e2", "u3"])
        #expect(try await eventually { await store.queuedDeliveryCount() == 0 })
    }

    @Test("a sink that names what it did not take is handed that alone again: what it sent is not sent twice")
    func aPartialFailureRetriesWhatWasLeft() async throws {
        let store = InMemoryStore()
        let flaky = PartlyFailingSink()
        let other = CapturingSink()
        let relay = F.relay(store, [flaky, other], mode: .background)
        let running = Task { try await relay.run() }
        defer { running.cancel() }
        let batch = (1...6).map { F.delivery("u\($0)", activity: "a\($0)", .update) } + [F.delivery("s7", activity: "a7", .start)]
        try await F.queue(batch, store, relay)
        #expect(try await eventually { await store.queuedDeliveryCount() == 0 })
        // The first call took u1, u3, u5 and s7 and gave up on the others, naming them; the retry carried those alone.
        #expect(flaky.calls == [batch.map(\.id), ["u2", "u4", "u6"]])
        #expect(flaky.taken.sorted() == batch.map(\.id).sorted(), "each taken once")
        // The sink that took the batch had it once.
        #expect(other.deliveries.map(\.id) == batch.map(\.id))
    }

    @Test func afterARestartWhatTheStoreStillHasGoesOutWithTheSameIdsAndBytes() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("relay-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("m.sqlite").path
        let left = [F.delivery("u1", activity: "a1", .update), F.delivery("e1", activity: "a2", .end)]
        do {
            // The process that "crashed": saved, never sent.
            let before = try SQLiteStore(path: path)
            try await before.saveActivities([], enqueue: left)
            try before.close()
        }
        let store = try SQLiteStore(path: path)
        let sink = CapturingSink()
        let relay = F.relay(store, [sink], mode: .background)
        try await relay.recover()
        let running = Task { try await relay.run() }
        defer { running.cancel() }

        #expect(try await eventually { sink.deliveries.count == 2 })
        #expect(sink.deliveries.map(\.id) == ["u1", "e1"])
        #expect(sink.deliveries.map(\.payload.bytes) == left.map(\.payload.bytes))
        #expect(try await eventually { try await store.queuedDeliveryCount() == 0 })
        try store.close()
    }
}

/// Calls `observe` with each batch it is handed and keeps what it returned.
private final class ObservingSink: DeliverySink, @unchecked Sendable {
    let name = "observing"
    private let observe: @Sendable ([Delivery]) async throws -> [String]
    private let lock = NSLock()
    private var seen: [[String]] = []

    init(_ observe: @escaping @Sendable ([Delivery]) async throws -> [String]) {
        self.observe = observe
    }

    func deliver(_ batch: [Delivery]) async throws {
        let observation = try await observe(batch)
        lock.withLock { seen.append(observation) }
    }

    var observations: [[String]] { lock.withLock { seen } }
}

/// Takes every other delivery of its first batch and throws naming the rest (`PartialDeliveryFailure`); takes whole
/// batches after.
private final class PartlyFailingSink: DeliverySink, @unchecked Sendable {
    struct GaveUp: PartialDeliveryFailure { let undelivered: [Delivery] }

    let name = "partly-failing"
    private let lock = NSLock()
    private var seen: [[String]] = []
    private var took: [String] = []

    func deliver(_ batch: [Delivery]) async throws {
        let first = lock.withLock { () -> Bool in
            seen.append(batch.map(\.id))
            return seen.count == 1
        }
        let split = Dictionary(grouping: batch.indices) { first && $0 % 2 == 1 }
        let kept = (split[false] ?? []).map { batch[$0] }
        lock.withLock { took += kept.map(\.id) }
        if let left = split[true] { throw GaveUp(undelivered: left.map { batch[$0] }) }
    }

    var calls: [[String]] { lock.withLock { seen } }
    var taken: [String] { lock.withLock { took } }
}
