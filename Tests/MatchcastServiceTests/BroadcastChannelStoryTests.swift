import AsyncHTTPClient
import Crypto
import Foundation
import Logging
import MatchcastCore
import MatchcastDelivery
import MatchcastFeeds
import MatchcastService
import MatchcastStore
import MatchcastTesting
import ServiceLifecycle
import Synchronization
import Testing

/// The APNs sink, counting the batches it is sending, so a test can let real I/O finish before it
/// moves virtual time on.
private final class TrackedSink: DeliverySink {
    let inner: APNsSink
    private let sending = Mutex(0)

    init(_ inner: APNsSink) { self.inner = inner }

    var name: String { inner.name }
    var countsDeliveries: Bool { inner.countsDeliveries }
    var isHealthy: Bool { inner.isHealthy }
    var busy: Bool { sending.withLock { $0 > 0 } }

    func deliver(_ batch: [Delivery]) async throws {
        sending.withLock { $0 += 1 }
        defer { sending.withLock { $0 -= 1 } }
        try await inner.deliver(batch)
    }
}

/// Broadcast channel mode end to end: the broker on a manual clock and the fake feed, sending to the
/// fake APNs (device pushes, channel management and broadcasts over real TLS + HTTP/2), its state in a
/// SQLite file kept across a restart. A match followed by enough devices gets a channel when it goes
/// live, its starts carry `input-push-channel`, every update and the end are one broadcast, and the
/// channel is deleted after the match; a match below the threshold goes per token as before.
@Suite("broadcast channels: the broker story", .serialized)
struct BroadcastChannelStoryTests {
    private typealias F = APNsFixture
    static let epoch = 1_800_000_000.0
    static let quiet = Logger(label: "test.channels", factory: { _ in SwiftLogNoOpLogHandler() })

    /// One running broker on a manual clock, sending to the fake APNs and to a capturing sink.
    struct Running {
        let broker: Broker
        let channels: BroadcastChannels
        fileprivate let sink: TrackedSink
        let capture: CapturingSink
        let clock: ManualClock
        let services: RunningServices
        let idleness: ClockIdleness

        func stop() async throws {
            try await services.stop()
            sink.inner.shutdown()
        }

        /// Advances virtual time, a deadline at a time, until `condition` holds. Deliveries and channel
        /// creation reach the fake APNs in real time: before each step the relay's queue, the APNs sink and
        /// the channel client are let finish, so the match does not run ahead of them. The limits are
        /// safety nets only.
        func drive(until condition: @escaping () async throws -> Bool, limit: Int = 100_000) async throws {
            var steps = 0
            while try await !condition() {
                await idleness.wait()
                for _ in 0..<20 { await Task.yield() }
                let (relay, sink, channels) = (broker.relay, sink, channels)
                let settled = try await eventually {
                    let creating = await channels.isCreating
                    let depth = await relay.depth
                    return depth == 0 && !sink.busy && !creating
                }
                try #require(settled, "deliveries or a channel still pending after a minute")
                if try await condition() { break }
                // At most a second at a time: a part busy with real I/O (a channel being created) is not
                // asleep on the clock, so the next deadline alone could skip the whole match.
                if let deadline = clock.nextDeadline { clock.advance(to: min(deadline, clock.now.advanced(by: .seconds(1)))) }
                steps += 1
                try #require(steps < limit, "condition not reached after \(steps) steps")
            }
        }
    }

    static func start(
        path: String, server: FakeAPNsServer, client: HTTPClient, key: P256.Signing.PrivateKey,
        at offset: Duration = .zero, seed: UInt64
    ) async throws -> Running {
        let clock = ManualClock(now: .init(offset: offset))
        let now: @Sendable () -> Date = { Date(timeIntervalSince1970: epoch + clock.now.offset.seconds) }
        let capture = CapturingSink()
        let sink = TrackedSink(try F.sink(server: server, client: client, key: key, clock: ContinuousClock()))
        let store = try SQLiteStore(path: path)
        // Football (at speed 5, about twenty simulated minutes) and tennis, from the same simulated start.
        let feed = try FakeFeed(seed: 1, speed: 5, scenarios: ["football", "tennis-bo3"])
        let settings = BrokerSettings(
            activityPolicy: ActivityPolicy(coalesceInterval: .seconds(10)), pushToStartSpacing: .seconds(5), seed: seed)
        let broker = Broker(
            store: store,
            transport: FakeFeedTransport(feed: feed, clock: clock, start: .init(offset: .zero)),
            sinks: [capture, sink], settings: settings,
            timing: PollTimingPolicy(defaultInterval: .seconds(1), minInterval: .milliseconds(100), maxInterval: .seconds(5), jitter: 0),
            clock: clock, now: now, logger: quiet)
        let channels = BroadcastChannels(
            client: try APNsChannelClient(sink: sink.inner, bundleId: settings.bundleId, logger: quiet), store: store, settings: settings,
            policy: ChannelPolicy(minFollowers: 3, deleteDelay: .seconds(10)), clock: clock, now: now, logger: quiet)
        await broker.useBroadcastChannels(channels)
        try await broker.restore()
        // Idle, at least four loops sleep: the live list's poll, the relist, the lifecycle ticker, the channels'
        // deletions; and each match's poll until the match is over.
        return Running(broker: broker, channels: channels, sink: sink, capture: capture, clock: clock, services: RunningServices(broker.services + [channels], logger: quiet),
                       idleness: ClockIdleness(clock: clock, floor: 4))
    }

    static func token(_ index: Int) -> String { String(repeating: String(format: "%02x", 0x10 + index), count: 32) }

    @Test("followed by three: a channel, starts onto it, one broadcast per update, across a restart, deleted after the end; tennis with one follower goes per token",
          .timeLimit(.minutes(4)))
    func channelStory() async throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("matchcast-channels-\(UUID().uuidString).sqlite").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        let (key, _) = try F.credentials()
        try await F.withServer(key: key) { server, client in
            // First life: three devices follow football, one follows tennis, before kick-off.
            let first = try await Self.start(path: path, server: server, client: client, key: key, seed: 1)
            let service = first.broker.service
            var devices: [DeviceRegistration] = []
            for index in 0..<4 {
                let device = try await service.registerDevice()
                try await service.setPushToStartToken(deviceId: device.deviceId, token: Self.token(index), environment: .sandbox)
                _ = try await service.follow(deviceId: device.deviceId, matchId: index < 3 ? "football" : "tennis-bo3")
                devices.append(device)
            }

            let footballStarts = { first.capture.deliveries.filter { $0.matchId == "football" && $0.payload.aps.event == .start } }
            try await first.drive { footballStarts().count == 3 }
            let channelId = try #require(server.createdChannels.first, "the match went live with three followers: a channel")
            #expect(server.createdChannels.count == 1)
            #expect(await first.channels.channelId(matchId: "football") == channelId)
            #expect(footballStarts().allSatisfy { $0.payload.aps.inputPushChannel == channelId && $0.target.kind == .pushToStartToken })
            #expect(Set(footballStarts().map(\.target.value)) == Set((0..<3).map(Self.token)))
            // The starts reached APNs with the channel in their payload.
            try await first.drive { server.accepted.filter { (0..<3).map(Self.token).contains($0.token) }.count == 3 }
            #expect(server.accepted.filter { (0..<3).map(Self.token).contains($0.token) }
                .allSatisfy { String(decoding: $0.body, as: UTF8.self).contains(#""input-push-channel":"\#(channelId)""#) })
            // GET /v1/matches/{id} shows it.
            #expect(try await service.match(id: "football").channelId == channelId)

            // Updates: each is one broadcast, never one per device.
            try await first.drive { server.broadcastCount(channel: channelId) >= 2 }
            let firstLife = first.capture.deliveries
            try await first.stop()

            // Second life on the same file: the channel is the same one, nothing is started or created again.
            let second = try await Self.start(path: path, server: server, client: client, key: key, at: first.clock.now.offset, seed: 2)
            #expect(try await second.broker.service.match(id: "football").channelId == channelId)
            let footballEnded = { second.capture.deliveries.contains { $0.matchId == "football" && $0.payload.aps.event == .end } }
            try await second.drive { footballEnded() }
            try await second.drive { server.deletedChannels == [channelId] }
            #expect(server.createdChannels == [channelId], "a restart creates no second channel")
            #expect(try await second.broker.service.match(id: "football").channelId == nil, "no channel once the match is over")

            // Tennis (one follower, below three) went per token: its start has no channel; with its update
            // token reported, updates go to that token.
            let tennisStart = { (firstLife + second.capture.deliveries).first { $0.matchId == "tennis-bo3" && $0.payload.aps.event == .start } }
            try await second.drive { tennisStart() != nil }
            let start = try #require(tennisStart())
            #expect(start.payload.aps.inputPushChannel == nil)
            let tennisToken = String(repeating: "ef", count: 32)
            _ = try await second.broker.service.putActivity(
                activityId: start.activityId, deviceId: devices[3].deviceId, matchId: "tennis-bo3", updateToken: tennisToken, environment: nil)
            try await second.drive { server.accepted.contains { $0.token == tennisToken } }
            try await second.drive { await second.channels.all().isEmpty }
            let all = firstLife + second.capture.deliveries
            try await second.stop()

            let football = all.filter { $0.matchId == "football" }
            #expect(football.filter { $0.payload.aps.event == .start }.count == 3, "nothing is started twice")
            #expect(!football.contains { $0.target.kind == .updateToken }, "no per-device pushes for a channel match")
            let broadcasts = football.filter { $0.target.kind == .channel }
            #expect(broadcasts.allSatisfy { $0.target.value == channelId })
            #expect(broadcasts.filter { $0.payload.aps.event == .update }.count >= 2)
            let ends = broadcasts.filter { $0.payload.aps.event == .end }
            #expect(ends.count == 1)
            #expect(ends.first?.payload.aps.dismissalDate != nil)
            #expect(ends.first?.payload.aps.contentState.status == "completed")
            // The fake got every broadcast delivery, and nothing else. A stop in the middle of a hand-over
            // may send one again after the restart, always under the same id (apns-request-id).
            let onChannel = server.broadcasts.filter { $0.channelId == channelId }
            let requestIds = Set(onChannel.compactMap { $0.requestId })
            let deliveryIds = Set(broadcasts.map { APNsNotificationID.uuid(forDeliveryId: $0.id) })
            // Every captured broadcast reached the fake. Under load a graceful stop can fall between the APNs sink and
            // the capturing sink: APNs has that broadcast, the capture never does, and after the restart a newer
            // broadcast supersedes it in the outbox. At most one such, at the one stop.
            #expect(deliveryIds.isSubset(of: requestIds))
            #expect(requestIds.count <= deliveryIds.count + 1)
            #expect(onChannel.count >= broadcasts.count)
            let stamps = onChannel.map { try? JSONSerialization.jsonObject(with: Data($0.body)) as? [String: Any] }
                .compactMap { ($0?["aps"] as? [String: Any])?["timestamp"] as? Int }
            #expect(stamps.count == onChannel.count && stamps == stamps.sorted(), "broadcast timestamps only grow")
            let timestamps = Set(broadcasts.map { $0.payload.aps.timestamp })
            #expect(timestamps.count == broadcasts.count, "each broadcast a new state")
            #expect(all.contains { $0.matchId == "tennis-bo3" && $0.target == PushTarget(kind: .updateToken, value: tennisToken) })
            #expect(!all.contains { $0.matchId == "tennis-bo3" && $0.target.kind == .channel })
            #expect(server.createdChannels.count == 1, "tennis got no channel")

            // The store forgot the deleted channel; the devices' follows are intact.
            let store = try SQLiteStore(path: path)
            #expect(try await store.channels().isEmpty)
            for device in devices.prefix(3) {
                #expect(try await store.follows(deviceId: device.deviceId).map(\.matchId) == ["football"])
            }
            try store.close()
        }
    }
}
