import Foundation
import Logging
import MatchcastCore
@testable import MatchcastService
import MatchcastStore
import MatchcastTesting
import Testing

/// A channel management API that creates every channel asked for.
private actor CreatingChannels: ChannelManagement {
    private var created = 0

    func createChannel() async throws -> String {
        created += 1
        return "Y2hhbm5lbC0\(created)"
    }

    func deleteChannel(_ channelId: String) async throws {}
}

/// `BroadcastChannels` saving a channel only once its broadcast is in the outbox: a channel stored as having
/// broadcast what never reached the outbox would not broadcast it again after a restart or a failed fan-out.
@Suite("broadcast channels: saved after their broadcast")
struct BroadcastChannelsCommitTests {
    static let match = "epl-mun-liv"

    /// The match at `home`-0; `goal`: with the key event that made it (always broadcast at once).
    static func update(_ home: Int, goal: Bool = false) -> MatchUpdate {
        let rendered = try! MatchRenderer.render(ManagerFixtures.football(match, .live, home: home, period: "2H", clock: "60'"))
        let event = KeyEvent(kind: .goal, title: "MUN \(home)-0 LIV", body: "Goal! Manchester United")
        return MatchUpdate(rendered: rendered, content: rendered.contentState, keyEvents: goal ? [event] : [], pollInterval: .seconds(5))
    }

    @Test func aBroadcastNotInTheOutboxIsNeitherSavedBehindItsBackNorLostWhenTheOperationFails() async throws {
        let clock = ManualClock()
        let now: @Sendable () -> Date = { Date(timeIntervalSince1970: 1_800_000_000 + clock.now.offset.seconds) }
        let store = InMemoryStore()
        let channels = BroadcastChannels(
            client: CreatingChannels(), store: store, settings: BrokerSettings(seed: 1),
            policy: ChannelPolicy(minFollowers: 1), clock: clock, now: now,
            logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }))
        let channelId = try #require(await channels.attach(Self.update(0), matchId: Self.match, followers: 1).channelId)
        let stored = try #require(await store.channel(matchId: Self.match)?.channel)

        // A goal: the channel broadcasts it, and the lifecycle is still putting that broadcast in the outbox when
        // the actor's own periodic save runs. The store must not learn of the broadcast yet.
        clock.advance(by: .seconds(30))
        let goal = await channels.matchChanged(Self.update(1, goal: true), matchId: Self.match)
        #expect(goal.map(\.target) == [PushTarget(kind: .channel, value: channelId)])
        await channels.saveDirty()
        #expect(await store.channel(matchId: Self.match)?.channel == stored, "saved before its broadcast was queued")

        // The operation fails (the broadcast never reached the outbox): the channel is read back, and its next
        // look at the match (the same score, no key event this time) broadcasts that score again.
        await channels.rollBack(matchId: Self.match)
        #expect(await channels.all()[Self.match] == stored)
        let again = await channels.matchChanged(Self.update(1), matchId: Self.match)
        #expect(again.map(\.payload.aps.contentState) == goal.map(\.payload.aps.contentState))

        // This time the broadcast is queued and committed: now the store has it, and it is not sent twice.
        try await store.saveActivities([], enqueue: again)
        await channels.commit(matchId: Self.match)
        let committed = try #require(await store.channel(matchId: Self.match)?.channel)
        #expect(committed != stored)
        #expect(await channels.all()[Self.match] == committed)
        #expect(await channels.matchChanged(Self.update(1), matchId: Self.match).isEmpty)

        // A change with nothing to broadcast (the same content) is saved by the periodic save as before.
        await channels.saveDirty()
        #expect(await store.channel(matchId: Self.match)?.channel == committed)
    }
}
