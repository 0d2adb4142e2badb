import Foundation
import MatchcastCore
import MatchcastStore
import MatchcastTesting
import Synchronization
import Testing
@testable import MatchcastService

private typealias F = ManagerFixtures

/// A store that passes every call to `base` (a SQLite file here), but fails `saveActivities(_:enqueue:)` on the
/// n-th call after `failCall(_:)`, and counts those calls, so a test can break one chunk of a fan-out.
private final class ChunkFailingStore: MatchcastStore {
    let base: any MatchcastStore
    private struct Script {
        var calls = 0
        var failOn: Int?
        var shares: [FanOutShare?] = []
        /// For each of those calls, the snapshot of the match row it carried, if any.
        var carried: [MatchSnapshot?] = []
        /// Match rows saved alone (`saveMatch`).
        var matchesAlone = 0
    }
    private let script = Mutex(Script())

    init(_ base: any MatchcastStore) { self.base = base }

    /// Counting starts again; the `call`-th `saveActivities(_:enqueue:)` from now on fails (nil: none fails).
    func failCall(_ call: Int?) { script.withLock { $0 = Script(calls: 0, failOn: call) } }

    /// `saveActivities(_:enqueue:)` calls since the last `failCall(_:)`.
    var enqueueingSaves: Int { script.withLock { $0.calls } }

    var keepsFanOutState: Bool { base.keepsFanOutState }
    /// As PostgreSQL: chunks that queue behind a save are saved together, so the tests below see joined saves too.
    var savesChunksTogether: Bool { true }

    /// How each of those calls was described to the store (nil: not as a fan-out chunk).
    var shares: [FanOutShare?] { script.withLock { $0.shares } }

    func saveActivities(_ records: [ActivityRecord], enqueue deliveries: [Delivery]) async throws(StoreError) {
        try await saveActivities(records, enqueue: deliveries, share: nil)
    }

    /// For each of those calls, the snapshot of the match row it carried (nil: none).
    var carried: [MatchSnapshot?] { script.withLock { $0.carried } }

    /// `saveMatch` calls since the last `failCall(_:)`.
    var matchesAlone: Int { script.withLock { $0.matchesAlone } }

    func saveActivities(
        _ records: [ActivityRecord], enqueue deliveries: [Delivery], share: FanOutShare?
    ) async throws(StoreError) {
        try await saveActivities(records, enqueue: deliveries, share: share, match: nil)
    }

    func saveActivities(
        _ records: [ActivityRecord], enqueue deliveries: [Delivery], share: FanOutShare?, match: MatchRecord?
    ) async throws(StoreError) {
        let fail = script.withLock { script -> Bool in
            script.calls += 1
            script.shares.append(share)
            script.carried.append(match?.snapshot)
            return script.calls == script.failOn
        }
        if fail { throw StoreError.database }
        try await base.saveActivities(records, enqueue: deliveries, share: share, match: match)
    }

    func createDevice(_ device: DeviceRecord) async throws(StoreError) { try await base.createDevice(device) }
    func device(id: String) async throws(StoreError) -> DeviceRecord? { try await base.device(id: id) }
    func deleteDevice(id: String) async throws(StoreError) -> Bool { try await base.deleteDevice(id: id) }
    func setPushToStartToken(_ record: PushToStartTokenRecord) async throws(StoreError) {
        try await base.setPushToStartToken(record)
    }
    func pushToStartToken(deviceId: String) async throws(StoreError) -> PushToStartTokenRecord? {
        try await base.pushToStartToken(deviceId: deviceId)
    }
    func pushToStartTokenHolder(token: String) async throws(StoreError) -> String? {
        try await base.pushToStartTokenHolder(token: token)
    }

    func removePushToStartToken(token: String) async throws(StoreError) -> String? {
        try await base.removePushToStartToken(token: token)
    }
    func addFollow(_ follow: FollowRecord) async throws(StoreError) -> Bool { try await base.addFollow(follow) }
    func removeFollow(deviceId: String, matchId: String) async throws(StoreError) -> Bool {
        try await base.removeFollow(deviceId: deviceId, matchId: matchId)
    }
    func follows(deviceId: String) async throws(StoreError) -> [FollowRecord] { try await base.follows(deviceId: deviceId) }
    func followers(matchId: String) async throws(StoreError) -> [FollowRecord] { try await base.followers(matchId: matchId) }
    func followedMatchIds() async throws(StoreError) -> [String] { try await base.followedMatchIds() }
    func saveActivity(_ record: ActivityRecord) async throws(StoreError) { try await base.saveActivity(record) }
    func saveActivities(_ records: [ActivityRecord]) async throws(StoreError) { try await base.saveActivities(records) }
    func queuedDeliveries(limit: Int) async throws(StoreError) -> [Delivery] { try await base.queuedDeliveries(limit: limit) }
    func removeQueuedDeliveries(ids: [String]) async throws(StoreError) { try await base.removeQueuedDeliveries(ids: ids) }
    func queuedDeliveryCount() async throws(StoreError) -> Int { try await base.queuedDeliveryCount() }
    func recordDeadLetters(_ letters: [DeadLetter]) async throws(StoreError) { try await base.recordDeadLetters(letters) }
    func deadLetters(limit: Int) async throws(StoreError) -> [DeadLetter] { try await base.deadLetters(limit: limit) }
    func recordTokenRefusal(_ refusal: TokenRefusal) async throws(StoreError) { try await base.recordTokenRefusal(refusal) }
    func tokenRefusals(deviceId: String) async throws(StoreError) -> [TokenRefusal] { try await base.tokenRefusals(deviceId: deviceId) }
    func noteUpdateTokens(_ sightings: [UpdateTokenSighting], now: Date) async throws(StoreError) {
        try await base.noteUpdateTokens(sightings, now: now)
    }
    func updateTokenSightings(deviceId: String) async throws(StoreError) -> [UpdateTokenSighting] {
        try await base.updateTokenSightings(deviceId: deviceId)
    }
    func activity(id: String) async throws(StoreError) -> ActivityRecord? { try await base.activity(id: id) }
    func activities(matchId: String) async throws(StoreError) -> [ActivityRecord] { try await base.activities(matchId: matchId) }
    func activities(deviceId: String) async throws(StoreError) -> [ActivityRecord] {
        try await base.activities(deviceId: deviceId)
    }
    func activity(updateToken: String) async throws(StoreError) -> ActivityRecord? {
        try await base.activity(updateToken: updateToken)
    }
    func deleteActivity(id: String) async throws(StoreError) -> Bool { try await base.deleteActivity(id: id) }
    func openActivities() async throws(StoreError) -> [ActivityRecord] { try await base.openActivities() }
    func saveMatch(_ record: MatchRecord) async throws(StoreError) {
        script.withLock { $0.matchesAlone += 1 }
        try await base.saveMatch(record)
    }
    func match(id: String) async throws(StoreError) -> MatchRecord? { try await base.match(id: id) }
    func matches() async throws(StoreError) -> [MatchRecord] { try await base.matches() }
    func deleteMatch(id: String) async throws(StoreError) -> Bool { try await base.deleteMatch(id: id) }
    func ping() async throws(StoreError) { try await base.ping() }
    func census() async throws(StoreError) -> StoreCensus { try await base.census() }
}

/// A SQLite file in a temporary directory, removed with its WAL files.
private struct TemporaryDatabase {
    let path = FileManager.default.temporaryDirectory
        .appendingPathComponent("matchcast-chunked-\(UUID().uuidString).sqlite").path

    func remove() {
        for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) }
    }
}

/// A fan-out committed in chunks of `LifecycleManager.fanOutChunk`: the order, the outbox rule and a failed chunk,
/// on a real SQLite file.
@Suite("Chunked fan-out", .serialized, .timeLimit(.minutes(5)))
struct ChunkedFanOutTests {
    static let matchId = "m"
    /// More than two chunks, the last one partial.
    static let activities = 2 * LifecycleManager.fanOutChunk + 552
    static let goal = MatchEvent(id: "g1", type: "goal", text: "GOAL! Saka 31'")
    static let secondGoal = MatchEvent(id: "g2", type: "goal", text: "GOAL! Palmer 55'")

    static let kickOff = F.football(matchId, clock: "1'", seq: 1)
    static let firstGoal = F.football(matchId, home: 1, clock: "31'", seq: 2, events: [goal])
    static let twoNil = F.football(matchId, home: 2, clock: "55'", seq: 3, events: [goal, secondGoal])

    /// The activity ids, in id order: the order a fan-out visits them.
    static let activityIds = (0..<activities).map { String(format: "act_%05d", $0) }

    /// `count` devices (`activities` unless given), each with an active (app-started, token known) activity of the
    /// match, written straight to the store, in an order that is not their id order; then the match's first snapshot,
    /// which sends each one update. Returns the harness.
    static func seed(
        _ store: any MatchcastStore, clock: ManagerTestClock, count: Int = activities, metrics: BrokerMetrics = BrokerMetrics()
    ) async throws -> ManagerHarness {
        var records: [ActivityRecord] = []
        for n in (0..<count).map({ ($0 * 1_009) % count }) {  // a permutation: 1,009 is a prime, none of the counts' factors
            let deviceId = String(format: "dev_%05d", n)
            try await store.createDevice(DeviceRecord(id: deviceId, secretHash: "hash", createdAt: clock.now))
            let lifecycle = ActivityLifecycle.adopted(
                activityId: activityIds[n], matchId: matchId, updateToken: F.update(n), now: clock.now)
            records.append(ActivityRecord(deviceId: deviceId, environment: .production, lifecycle: lifecycle, updatedAt: clock.now))
        }
        try await store.saveActivities(records)
        let h = ManagerHarness(store: store, clock: clock, seed: 11, metrics: metrics)
        try await h.ingest(kickOff)
        try #require(h.deliveries.count == count, "the kick-off reaches every activity")
        return h
    }

    /// A fresh SQLite file behind a `ChunkFailingStore`, seeded (`seed`); closed and removed after `body`.
    fileprivate static func withSeededStore(
        clockStep: Double = 0, count: Int = activities, metrics: BrokerMetrics = BrokerMetrics(),
        _ body: (ChunkFailingStore, ManagerTestClock, ManagerHarness) async throws -> Void
    ) async throws {
        let database = TemporaryDatabase()
        defer { database.remove() }
        let sqlite = try SQLiteStore(path: database.path)
        defer { try? sqlite.close() }
        let store = ChunkFailingStore(sqlite)
        let clock = ManagerTestClock(step: clockStep)
        try await body(store, clock, try await seed(store, clock: clock, count: count, metrics: metrics))
    }

    /// Every delivery is an update to its activity's own token; one per activity, in id order, ids unique.
    static func expectOneUpdateEach(_ deliveries: [Delivery], activityIds: ArraySlice<String>, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(deliveries.map(\.activityId) == Array(activityIds), "one each, in activity-id order", sourceLocation: sourceLocation)
        #expect(Set(deliveries.map(\.id)).count == deliveries.count, "delivery ids unique", sourceLocation: sourceLocation)
        #expect(deliveries.allSatisfy { $0.payload.aps.event == .update && $0.matchId == matchId },
                sourceLocation: sourceLocation)
        #expect(deliveries.allSatisfy { $0.target.value == F.update(Int($0.activityId.dropFirst(4))!) },
                "each to its own token", sourceLocation: sourceLocation)
    }

    /// The store's records of the match, by activity id.
    static func stored(_ store: any MatchcastStore) async throws -> [String: ActivityRecord] {
        Dictionary(uniqueKeysWithValues: try await store.activities(matchId: matchId).map { ($0.activityId, $0) })
    }

    /// Whether `record` is the state `delivery` sent: the same content, the same push timestamp.
    static func carries(_ record: ActivityRecord?, _ delivery: Delivery) -> Bool {
        guard let record else { return false }
        return record.lifecycle.sentContent == delivery.payload.aps.contentState
            && record.lifecycle.lastTimestamp == delivery.payload.aps.timestamp
    }

    /// No activity was sent the same state (event and content) twice under different ids.
    static func expectNoStateReissued(_ deliveries: [Delivery], sourceLocation: SourceLocation = #_sourceLocation) {
        var ids: [String: Set<String>] = [:]
        for delivery in deliveries {
            let aps = delivery.payload.aps
            ids["\(delivery.activityId)|\(aps.event)|\(aps.contentState.summary)|\(aps.contentState.event ?? "")", default: []]
                .insert(delivery.id)
        }
        let reissued = ids.filter { $0.value.count > 1 }
        #expect(reissued.isEmpty, "the same state under different ids: \(reissued.keys.sorted().prefix(3))",
                sourceLocation: sourceLocation)
    }

    // MARK: a. Every chunk, in order

    @Test("a fan-out over three chunks: one update per activity, in id order across chunks, saved, outbox empty")
    func fanOutAcrossChunks() async throws {
        #expect(Self.activities > 2 * LifecycleManager.fanOutChunk)
        // The clock moves on while the manager works, as a wall clock does: the chunks still share one state.
        try await Self.withSeededStore(clockStep: 0.000_1) { store, clock, h in
            Self.expectOneUpdateEach(h.deliveries, activityIds: Self.activityIds[...])

            clock.advance(by: 30)
            let mark = h.deliveries.count
            store.failCall(nil)
            try await h.ingest(Self.firstGoal)
            let goal = h.deliveries(since: mark)
            Self.expectOneUpdateEach(goal, activityIds: Self.activityIds[...])
            #expect(goal.allSatisfy { $0.apns.priority == 10 && $0.payload.aps.contentState.home.score == "1" })
            #expect(Set(goal.map(\.id)).isDisjoint(with: h.deliveries.prefix(mark).map(\.id)))
            // Worked out in chunks of 1,024 + 1,024 + 552: the first saved alone, those worked out while a save ran
            // saved together (`CommitPipeline`). Each save told the store that all its activities only moved to one
            // state, the fan-out's, and where its range ends (the last one: nowhere); the ranges follow each other
            // at chunk boundaries.
            let shares = store.shares.compactMap { $0 }
            #expect(store.enqueueingSaves == shares.count)
            #expect(shares.first?.moved.count == 1_024, "the first chunk is saved alone")
            #expect(shares.map(\.moved.count).reduce(0, +) == Self.activities)
            #expect(shares.first?.from == Self.activityIds[0])
            #expect(shares.last?.through == nil)
            var end = 0
            for share in shares {
                #expect(share.from == Self.activityIds[end])
                end += share.moved.count
                #expect(end == Self.activities || end % LifecycleManager.fanOutChunk == 0)
                #expect(share.through == (end == Self.activities ? nil : Self.activityIds[end - 1]))
            }
            #expect(Set(shares.map(\.state.updatedAt)).count == 1)
            // The match's row went with the first save, in its transaction, and with no other; never alone.
            #expect(store.carried.first == Self.firstGoal)
            #expect(store.carried.dropFirst().allSatisfy { $0 == nil })
            #expect(store.matchesAlone == 0)
            #expect(try await store.match(id: Self.matchId)?.snapshot == Self.firstGoal)
            #expect(try await store.queuedDeliveryCount() == 0, "every saved delivery was sent and left the outbox")

            let records = try await Self.stored(store)
            #expect(records.count == Self.activities)
            let stale = goal.filter { !Self.carries(records[$0.activityId], $0) }.map(\.activityId)
            #expect(stale.isEmpty, "records without the goal: \(stale.prefix(5))")
            #expect(records.values.allSatisfy { $0.isOpen && $0.phase == .active })

            // The cache agrees with the store: the same update again sends nothing, a restart neither.
            try await h.ingest(Self.firstGoal)
            #expect(h.deliveries.count == mark + Self.activities)
            let second = ManagerHarness(store: store, clock: clock, seed: 12)
            try await second.lifecycle.restore()
            #expect(second.deliveries.isEmpty, "a restart finds every activity up to date")
        }
    }

    // MARK: b. A fan-out of one chunk

    @Test("a fan-out of one chunk: one save carrying the match's row, then sent; a failed save sends nothing and keeps the row")
    func fanOutOfOneChunk() async throws {
        let count = 5
        try await Self.withSeededStore(count: count) { store, clock, h in
            let ids = Self.activityIds[..<count]
            clock.advance(by: 30)
            let mark = h.deliveries.count

            // The save fails: nothing is sent, the row and the tracker stay at the kick-off.
            store.failCall(1)
            await #expect(throws: ServiceError.self) { try await h.ingest(Self.firstGoal) }
            #expect(store.enqueueingSaves == 1)
            #expect(store.carried == [Self.firstGoal], "the failed save carried the match's row")
            #expect(h.deliveries.count == mark, "nothing was sent")
            #expect(try await store.match(id: Self.matchId)?.snapshot == Self.kickOff)
            #expect(await h.lifecycle.latest(matchId: Self.matchId)?.snapshot == Self.kickOff)

            // The same snapshot again: one save, described as the chunk it is and carrying the row; then sent.
            store.failCall(nil)
            clock.advance(by: 5)
            try await h.ingest(Self.firstGoal)
            let goal = h.deliveries(since: mark)
            Self.expectOneUpdateEach(goal, activityIds: ids)
            #expect(store.enqueueingSaves == 1, "one save for the whole fan-out")
            #expect(store.shares.first??.moved.count == count)
            #expect(store.shares.first??.through == nil)
            #expect(store.carried == [Self.firstGoal])
            #expect(store.matchesAlone == 0)
            #expect(try await store.queuedDeliveryCount() == 0, "sent, and out of the outbox")
            let records = try await Self.stored(store)
            #expect(goal.allSatisfy { Self.carries(records[$0.activityId], $0) })
            #expect(try await store.match(id: Self.matchId)?.snapshot == Self.firstGoal)
            let second = ManagerHarness(store: store, clock: clock, seed: 12)
            try await second.lifecycle.restore()
            #expect(second.deliveries.isEmpty, "a restart finds every activity at the goal")
        }
    }

    @Test("each fan-out that went out is timed once (matchcast_fanout_duration_seconds); one whose save failed is not")
    func fanOutsAreTimed() async throws {
        let recording = RecordingMetrics()
        func timings() -> [Int64] { recording.timings("matchcast_fanout_duration_seconds") }
        try await Self.withSeededStore(count: 5, metrics: BrokerMetrics(factory: recording)) { store, clock, h in
            #expect(timings().count == 1, "the kick-off's")
            clock.advance(by: 30)
            store.failCall(1)
            await #expect(throws: ServiceError.self) { try await h.ingest(Self.firstGoal) }
            #expect(timings().count == 1, "the failed fan-out is not timed")
            store.failCall(nil)
            let mark = h.deliveries.count
            try await h.ingest(Self.firstGoal)
            #expect(h.deliveries.count == mark + 5)
            #expect(timings().count == 2)
            #expect(timings().allSatisfy { $0 > 0 })
        }
    }

    // MARK: c. A failed chunk

    @Test("the first chunk's save fails: nothing is sent, the match's row and tracker stay; the same snapshot goes out again")
    func failedFirstChunkKeepsTheMatchWhereItWas() async throws {
        try await Self.withSeededStore { store, clock, h in
            let before = try await Self.stored(store)
            clock.advance(by: 30)
            let mark = h.deliveries.count
            store.failCall(1)
            await #expect(throws: ServiceError.self) { try await h.ingest(Self.firstGoal) }
            #expect(store.enqueueingSaves == 1, "nothing is saved after the failed chunk")
            #expect(store.carried == [Self.firstGoal], "the failed save carried the match's row")
            #expect(h.deliveries.count == mark, "nothing was sent")
            #expect(try await store.match(id: Self.matchId)?.snapshot == Self.kickOff, "the row is not saved without its chunk")
            #expect(try await Self.stored(store) == before)
            #expect(await h.lifecycle.latest(matchId: Self.matchId)?.snapshot == Self.kickOff,
                    "the tracker is back at the kick-off")

            // The store is back, and the feed answers with the same snapshot: it is still news, and goes out whole.
            store.failCall(nil)
            clock.advance(by: 5)
            try await h.ingest(Self.firstGoal)
            let goal = h.deliveries(since: mark)
            Self.expectOneUpdateEach(goal, activityIds: Self.activityIds[...])
            #expect(goal.allSatisfy { $0.payload.aps.contentState.home.score == "1" })
            #expect(store.carried.first == Self.firstGoal)
            #expect(try await store.match(id: Self.matchId)?.snapshot == Self.firstGoal)
            let second = ManagerHarness(store: store, clock: clock, seed: 12)
            try await second.lifecycle.restore()
            #expect(second.deliveries.isEmpty, "a restart finds the match and every activity at the goal")
        }
    }

    enum Recovery: String, CaseIterable, CustomTestStringConvertible {
        case restart
        case nextUpdate
        /// Neither: the broker's next tick fans the update out again from the store.
        case tick
        var testDescription: String { rawValue }
    }

    @Test("the second chunk's save fails: the first chunk went out, nothing after it; the activities catch up afterwards",
          arguments: Recovery.allCases)
    func failedChunkStopsTheRest(recovery: Recovery) async throws {
        try await Self.withSeededStore { store, clock, h in
            let before = try await Self.stored(store)

            clock.advance(by: 30)
            let mark = h.deliveries.count
            store.failCall(2)
            await #expect(throws: ServiceError.self) { try await h.ingest(Self.firstGoal) }
            #expect(store.enqueueingSaves == 2, "the chunk after the failed one is not saved")

            // Only the first chunk reached the sink, whole and in order; nothing is left in the outbox.
            let chunk = LifecycleManager.fanOutChunk
            let sent = h.deliveries(since: mark)
            Self.expectOneUpdateEach(sent, activityIds: Self.activityIds[..<chunk])
            #expect(try await store.queuedDeliveryCount() == 0, "nothing of the failed chunks in the outbox")
            // Nothing runs on behind the error.
            try await Task.sleep(for: .milliseconds(200))
            #expect(h.deliveries.count == mark + chunk)
            #expect(store.enqueueingSaves == 2)

            // The store has the goal for the first chunk; the others are as they were.
            var records = try await Self.stored(store)
            for delivery in sent { #expect(Self.carries(records[delivery.activityId], delivery)) }
            let untouched = Self.activityIds[chunk...].filter { records[$0] != before[$0] }
            #expect(untouched.isEmpty, "records of unsaved chunks changed: \(untouched.prefix(5))")

            // The store is back.
            store.failCall(nil)
            // A tick a minute on would also refresh the first chunk's stale-dates (a legitimate resend): one second on.
            clock.advance(by: recovery == .tick ? 1 : 60)
            var everything = h.deliveries
            switch recovery {
            case .restart:
                let second = ManagerHarness(store: store, clock: clock, seed: 12)
                try await second.lifecycle.restore()
                let catchUp = second.deliveries
                Self.expectOneUpdateEach(catchUp, activityIds: Self.activityIds[chunk...])
                #expect(catchUp.allSatisfy { $0.payload.aps.contentState == sent[0].payload.aps.contentState },
                        "the goal the first chunk had")
                everything += catchUp
                records = try await Self.stored(store)
                for delivery in catchUp { #expect(Self.carries(records[delivery.activityId], delivery)) }
                // And nothing more on another restart.
                let third = ManagerHarness(store: store, clock: clock, seed: 13)
                try await third.lifecycle.restore()
                #expect(third.deliveries.isEmpty)
            case .tick:
                let next = h.deliveries.count
                _ = try await h.tick()
                let catchUp = h.deliveries(since: next)
                Self.expectOneUpdateEach(catchUp, activityIds: Self.activityIds[chunk...])
                #expect(catchUp.allSatisfy { $0.payload.aps.contentState == sent[0].payload.aps.contentState },
                        "the goal the first chunk had")
                everything = h.deliveries
                records = try await Self.stored(store)
                for delivery in catchUp { #expect(Self.carries(records[delivery.activityId], delivery)) }
                // Once caught up, the next tick has nothing to send, and neither has a restart.
                let after = h.deliveries.count
                _ = try await h.tick()
                #expect(h.deliveries.count == after)
                let second = ManagerHarness(store: store, clock: clock, seed: 12)
                try await second.lifecycle.restore()
                #expect(second.deliveries.isEmpty)
            case .nextUpdate:
                let next = h.deliveries.count
                try await h.ingest(Self.twoNil)
                let update = h.deliveries(since: next)
                Self.expectOneUpdateEach(update, activityIds: Self.activityIds[...])
                #expect(update.allSatisfy { $0.payload.aps.contentState.home.score == "2" && $0.apns.priority == 10 })
                everything = h.deliveries
                records = try await Self.stored(store)
                let behind = update.filter { !Self.carries(records[$0.activityId], $0) }.map(\.activityId)
                #expect(behind.isEmpty, "records not up to date: \(behind.prefix(5))")
                // A restart now finds nothing to send.
                let second = ManagerHarness(store: store, clock: clock, seed: 12)
                try await second.lifecycle.restore()
                #expect(second.deliveries.isEmpty)
            }
            #expect(try await store.queuedDeliveryCount() == 0)
            Self.expectNoStateReissued(everything)
            auditSameIdSameContent(everything)
        }
    }

    /// A delivery id seen twice carries the same delivery.
    private func auditSameIdSameContent(_ deliveries: [Delivery], sourceLocation: SourceLocation = #_sourceLocation) {
        var byId: [String: Delivery] = [:]
        for delivery in deliveries {
            if let earlier = byId.updateValue(delivery, forKey: delivery.id) {
                #expect(earlier == delivery, "\(delivery.id) twice with different content", sourceLocation: sourceLocation)
            }
        }
    }
}
