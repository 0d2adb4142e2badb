import Foundation
import Logging
import MatchcastCore
import MatchcastDelivery
import MatchcastService
import MatchcastStore
import MatchcastTesting
import Testing

/// A channel management API that refuses the first deletes it is asked for.
private actor RefusingDeletes: ChannelManagement {
    private var refusals: Int
    private(set) var created: [String] = []
    private(set) var deleteCalls: [String] = []

    init(refusing refusals: Int) { self.refusals = refusals }

    func createChannel() async throws -> String {
        let id = "Y2hhbm5lbC0\(created.count)"
        created.append(id)
        return id
    }

    func deleteChannel(_ channelId: String) async throws {
        deleteCalls.append(channelId)
        if refusals > 0 {
            refusals -= 1
            throw APNsUnavailable()
        }
    }

    struct APNsUnavailable: Error {}
}

/// `BroadcastChannels` deleting a channel after its match: not while the end is still queued, again and
/// again while APNs refuses, and only then forgotten by the store. Manual clock, in-memory store.
@Suite("broadcast channels: deleting after the match")
struct BroadcastChannelsDeleteTests {
    static func update(_ status: MatchStatus, _ home: Int) -> MatchUpdate {
        let rendered = try! MatchRenderer.render(ManagerFixtures.football("epl-mun-liv", status, home: home, period: "2H", clock: "90'"))
        return MatchUpdate(rendered: rendered, content: rendered.contentState, keyEvents: [], pollInterval: .seconds(5))
    }

    @Test func aRefusedDeleteIsTriedAgainAndTheChannelIsForgottenOnlyOnceDeleted() async throws {
        let clock = ManualClock()
        let now: @Sendable () -> Date = { Date(timeIntervalSince1970: 1_800_000_000 + clock.now.offset.seconds) }
        let store = InMemoryStore()
        let apns = RefusingDeletes(refusing: 2)
        let channels = BroadcastChannels(
            client: apns, store: store, settings: BrokerSettings(seed: 1),
            policy: ChannelPolicy(minFollowers: 2, deleteDelay: .seconds(10)), clock: clock, now: now,
            logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }))

        // Below the threshold: no channel; at it: one, saved at once.
        #expect(await channels.attach(Self.update(.live, 0), matchId: "epl-mun-liv", followers: 1).channelId == nil)
        let live = await channels.attach(Self.update(.live, 0), matchId: "epl-mun-liv", followers: 2)
        let channelId = try #require(live.channelId)
        #expect(await store.channel(matchId: "epl-mun-liv")?.channelId == channelId)

        // The end: one broadcast, which the lifecycle is still saving (not committed yet).
        let end = await channels.matchChanged(Self.update(.completed, 1), matchId: "epl-mun-liv")
        #expect(end.map(\.target) == [PushTarget(kind: .channel, value: channelId)])
        #expect(end.first?.payload.aps.event == .end)
        #expect(await channels.channelId(matchId: "epl-mun-liv") == nil)

        // Not before deleteDelay; not while the end is being saved.
        await channels.deleteDue()
        #expect(await apns.deleteCalls.isEmpty)
        clock.advance(by: .seconds(10))
        await channels.deleteDue()
        #expect(await apns.deleteCalls.isEmpty, "the end is not in the outbox yet")
        try await store.saveActivities([], enqueue: end)
        await channels.commit(matchId: "epl-mun-liv")
        #expect(await store.channel(matchId: "epl-mun-liv")?.channel.phase == .closing)

        // Refused twice (5 s, then 10 s later), deleted the third time; kept in the store until then.
        clock.advance(by: .seconds(10))
        await channels.deleteDue()
        clock.advance(by: .seconds(4))
        await channels.deleteDue()
        #expect(await apns.deleteCalls.count == 1)
        clock.advance(by: .seconds(1))
        await channels.deleteDue()
        #expect(await apns.deleteCalls.count == 2)
        await channels.commit(matchId: "epl-mun-liv")
        #expect(await store.channel(matchId: "epl-mun-liv")?.channel.deleteAttempts == 2)
        clock.advance(by: .seconds(10))
        await channels.deleteDue()
        #expect(await apns.deleteCalls == [channelId, channelId, channelId])
        #expect(await store.channels().isEmpty)
        #expect(await channels.all().isEmpty)
        #expect(await apns.created == [channelId])
    }

    /// Once saved, the end is the relay's to send (the relay holds whatever the outbox holds, and a store without an
    /// outbox, `serve --store memory`'s, has nothing else): the delete waits while the relay's sink fails.
    @Test(arguments: [true, false])
    func theDeleteWaitsForTheRelayToSendTheEnd(keepsOutbox: Bool) async throws {
        let clock = ManualClock()
        let now: @Sendable () -> Date = { Date(timeIntervalSince1970: 1_800_000_000 + clock.now.offset.seconds) }
        let logger = Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() })
        let store = InMemoryStore(keepsOutbox: keepsOutbox)
        let apns = RefusingDeletes(refusing: 0)
        let channels = BroadcastChannels(
            client: apns, store: store, settings: BrokerSettings(seed: 1),
            policy: ChannelPolicy(minFollowers: 2, deleteDelay: .seconds(10)), clock: clock, now: now, logger: logger)
        let sink = FlakySink()
        sink.isDown = true
        let metrics = BrokerMetrics()
        let relay = DeliveryRelay(
            store: store, dispatcher: DeliveryDispatcher(sinks: [sink], metrics: metrics, logger: logger), mode: .background,
            metrics: metrics, backoff: RetryPolicy(initialBackoff: .milliseconds(5), maxBackoff: .milliseconds(20)), logger: logger)
        await channels.watch(relay)
        let running = Task { try await relay.run() }
        defer { running.cancel() }

        let channelId = try #require(await channels.attach(Self.update(.live, 0), matchId: "epl-mun-liv", followers: 2).channelId)
        let end = await channels.matchChanged(Self.update(.completed, 1), matchId: "epl-mun-liv")
        try await store.saveActivities([], enqueue: end)
        await relay.submit(end)
        await channels.commit(matchId: "epl-mun-liv")
        #expect(try await eventually { sink.attempts >= 2 })

        clock.advance(by: .seconds(10))
        await channels.deleteDue()
        #expect(await apns.deleteCalls.isEmpty, "the end is still in the relay")

        sink.isDown = false
        #expect(try await eventually { sink.deliveries.map(\.target) == [PushTarget(kind: .channel, value: channelId)] })
        #expect(try await eventually { await !relay.holds(PushTarget(kind: .channel, value: channelId)) })
        clock.advance(by: .seconds(10))
        await channels.deleteDue()
        #expect(await apns.deleteCalls == [channelId])
        #expect(await channels.all().isEmpty)
    }
}
