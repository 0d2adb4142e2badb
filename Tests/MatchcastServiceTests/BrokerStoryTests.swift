import Foundation
import Logging
import MatchcastCore
import MatchcastFeeds
import MatchcastService
import MatchcastStore
import MatchcastTesting
import ServiceLifecycle
import Testing

/// The README walkthrough as a test: register, push-to-start token, follow, start, update token,
/// updates, end — on the fake feed with a manual clock, then across a restart on the same SQLite file.
@Suite("broker: the whole story, and across a restart")
struct BrokerStoryTests {
    static let epoch = 1_800_000_000.0
    static let pushToStart = String(repeating: "ab", count: 32)
    static let updateToken = String(repeating: "cd", count: 32)

    /// One running broker on a manual clock.
    struct Running {
        let broker: Broker
        let sink: CapturingSink
        let clock: ManualClock
        let services: RunningServices

        func stop() async throws { try await services.stop() }

        let idleness: ClockIdleness

        /// Advances virtual time, a deadline at a time, until `condition` holds; each step only once the broker
        /// is idle, so the match cannot run ahead of a poll still at work.
        func drive(until condition: @escaping () async -> Bool, limit: Int = 50_000) async throws {
            var steps = 0
            while await !condition() {
                await idleness.wait()
                for _ in 0..<20 { await Task.yield() }
                if await condition() { break }
                if let deadline = clock.nextDeadline { clock.advance(to: deadline) }
                steps += 1
                try #require(steps < limit, "condition not reached after \(steps) steps")
            }
        }
    }

    static func start(path: String, at offset: Duration = .zero, seed: UInt64) async throws -> Running {
        let clock = ManualClock(now: .init(offset: offset))
        let now: @Sendable () -> Date = { Date(timeIntervalSince1970: epoch + clock.now.offset.seconds) }
        let sink = CapturingSink()
        let feed = try FakeFeed(seed: 1, speed: 10, scenarios: ["football"])
        let broker = Broker(
            store: try SQLiteStore(path: path),
            transport: FakeFeedTransport(feed: feed, clock: clock, start: .init(offset: .zero)),
            sinks: [sink],
            settings: BrokerSettings(
                activityPolicy: ActivityPolicy(coalesceInterval: .seconds(10)),
                pushToStartSpacing: .seconds(5), seed: seed),
            timing: PollTimingPolicy(defaultInterval: .seconds(1), minInterval: .milliseconds(100),
                                     maxInterval: .seconds(5), jitter: 0),
            clock: clock, now: now, logger: Logger(label: "test"))
        try await broker.restore()
        // Idle, four loops sleep: the live list's poll, the relist, the lifecycle ticker, the match's poll.
        return Running(broker: broker, sink: sink, clock: clock, services: RunningServices(broker.services),
                       idleness: ClockIdleness(clock: clock, floor: 4))
    }

    private static func temporaryDatabase() -> String {
        FileManager.default.temporaryDirectory.appendingPathComponent("matchcast-story-\(UUID().uuidString).sqlite").path
    }

    /// Removes the database at `path` with its write-ahead log and shared-memory files.
    private static func removeDatabase(_ path: String) {
        for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) }
    }

    @Test("the README story, then a restart that loses nothing and starts nothing twice", .timeLimit(.minutes(2)))
    func storyAcrossRestart() async throws {
        let path = Self.temporaryDatabase()
        defer { Self.removeDatabase(path) }

        // First life: follow before kick-off, see start, register the token, see updates.
        let first = try await Self.start(path: path, seed: 1)
        let service = first.broker.service
        let device = try await service.registerDevice()
        #expect(try await service.authenticateDevice(secret: device.deviceSecret) == device.deviceId)
        try await service.setPushToStartToken(deviceId: device.deviceId, token: Self.pushToStart, environment: .sandbox)
        let follow = try await service.follow(deviceId: device.deviceId, matchId: "football")
        #expect(follow.activityState == "waiting")
        let activityId = try #require(follow.activityId)

        try await first.drive { first.sink.deliveries.contains { $0.payload.aps.event == .start } }
        let start = try #require(first.sink.deliveries.first)
        #expect(start.payload.aps.event == .start)
        #expect(start.target == PushTarget(kind: .pushToStartToken, value: Self.pushToStart))
        #expect(start.activityId == activityId)
        #expect(start.payload.aps.attributes?.activityId == activityId)

        let adopted = try await service.putActivity(
            activityId: activityId, deviceId: device.deviceId, matchId: "football", updateToken: Self.updateToken,
            environment: nil)
        #expect(adopted.state == "active")
        try await first.drive { first.sink.deliveries.filter { $0.payload.aps.event == .update }.count >= 3 }
        let updates = first.sink.deliveries.filter { $0.payload.aps.event == .update }
        #expect(updates.allSatisfy { $0.target == PushTarget(kind: .updateToken, value: Self.updateToken) })
        #expect(updates.allSatisfy { $0.activityId == activityId })
        let stopTime = first.clock.now.offset
        let lastSent = try #require(first.sink.deliveries.last)
        try await first.stop()

        // While the broker was down the match moved on: the store holds a newer snapshot than the
        // device was sent (as if the process died between saving the match and delivering).
        let feed = try FakeFeed(seed: 1, speed: 10, scenarios: ["football"])
        let later = feed.timeline("football")!.snapshot(at: (stopTime + .seconds(60)).seconds * 10)
        let store = try SQLiteStore(path: path)
        try await store.saveMatch(MatchRecord(snapshot: later, updatedAt: Date(timeIntervalSince1970: Self.epoch)))
        try store.close()

        // Second life on the same file: restore brings the device up to date at once.
        let second = try await Self.start(path: path, at: stopTime + .seconds(60), seed: 2)
        // Restore queues it; the relay (a service of the group) sends it.
        try await second.drive { !second.sink.deliveries.isEmpty }
        let catchUp = try #require(second.sink.deliveries.first, "restore delivers the state the device missed")
        #expect(catchUp.payload.aps.event == .update)
        #expect(catchUp.activityId == activityId)
        #expect(catchUp.payload.aps.contentState != lastSent.payload.aps.contentState)
        #expect(catchUp.payload.aps.timestamp > lastSent.payload.aps.timestamp)

        try await second.drive { second.sink.deliveries.contains { $0.payload.aps.event == .end } }
        let deliveries = second.sink.deliveries
        #expect(!deliveries.contains { $0.payload.aps.event == .start }, "nothing is started twice")
        let ends = deliveries.filter { $0.payload.aps.event == .end }
        #expect(ends.count == 1)
        #expect(ends.first?.activityId == activityId)
        #expect(ends.first?.target == PushTarget(kind: .updateToken, value: Self.updateToken))
        #expect(ends.first?.payload.aps.dismissalDate != nil)
        // The relay may hand the end over before the test looks at the follow: wait until it shows.
        try await second.drive {
            (try? await second.broker.service.follows(deviceId: device.deviceId))?.first?.activityId == nil
        }
        let follows = try await second.broker.service.follows(deviceId: device.deviceId)
        #expect(follows.map(\.matchId) == ["football"])
        #expect(follows.first?.activityId == nil, "the ended activity is no longer open")
        try await second.stop()
    }

    @Test("an end held across a restart is still delivered", .timeLimit(.minutes(2)))
    func endSurvivesRestart() async throws {
        let path = Self.temporaryDatabase()
        defer { Self.removeDatabase(path) }
        let first = try await Self.start(path: path, seed: 3)
        let service = first.broker.service
        let device = try await service.registerDevice()
        try await service.setPushToStartToken(deviceId: device.deviceId, token: Self.pushToStart, environment: .production)
        let activityId = try #require(try await service.follow(deviceId: device.deviceId, matchId: "football").activityId)
        try await first.drive { first.sink.deliveries.contains { $0.payload.aps.event == .start } }
        // The match ends before the app reports its token: the end is held, not lost.
        try await first.drive { await first.broker.service.lifecycle.isFinal(matchId: "football") }
        #expect(!first.sink.deliveries.contains { $0.payload.aps.event == .end })
        let offset = first.clock.now.offset
        try await first.stop()

        let second = try await Self.start(path: path, at: offset, seed: 4)
        _ = try await second.broker.service.putActivity(
            activityId: activityId, deviceId: device.deviceId, matchId: "football", updateToken: Self.updateToken,
            environment: nil)
        try await second.drive { second.sink.deliveries.contains { $0.payload.aps.event == .end } }
        let ends = second.sink.deliveries.filter { $0.payload.aps.event == .end }
        #expect(ends.count == 1)
        #expect(ends.first?.activityId == activityId)
        #expect(ends.first?.payload.aps.contentState.status == "completed")
        try await second.stop()
    }
}
