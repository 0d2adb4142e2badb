import Foundation
import MatchcastTesting
import Testing
@testable import MatchcastCore

// Broadcast channels as values: a device activity started onto a channel, and a match's channel
// (its synthetic activity and its end of life), event by event with no I/O and no clock.

private enum ChannelFixture {
    static let epoch: TimeInterval = 1_776_780_000
    static let policy = ActivityPolicy(coalesceInterval: .seconds(10))
    static let channels = ChannelPolicy(minFollowers: 2, deleteDelay: .seconds(30), maxDeleteBackoff: .seconds(60))
    static let channelId = "Y2hhbm5lbC0x"

    static func at(_ seconds: Double) -> Date { Date(timeIntervalSince1970: epoch + seconds) }

    static func update(_ status: MatchStatus, _ home: Int = 0, _ away: Int = 0, keyEvents: [KeyEvent] = [], channel: String? = nil) -> MatchUpdate {
        let snapshot = MatchSnapshot(
            id: "epl-mun-liv", sport: .football, status: status, competition: "Premier League",
            home: Team(id: "mun", name: "Manchester United", short: "MUN"), away: Team(id: "liv", name: "Liverpool", short: "LIV"),
            score: .teamTotals(TeamScore(home: home, away: away, period: "1H", clock: "\(home + away)'")))
        let rendered = try! MatchRenderer.render(snapshot)
        var content = rendered.contentState
        content.event = keyEvents.last?.body
        var update = MatchUpdate(rendered: rendered, content: content, keyEvents: keyEvents, pollInterval: .seconds(5))
        update.channelId = channel
        return update
    }

    static func goal() -> KeyEvent { KeyEvent(kind: .goal, title: "MUN 1-0 LIV", body: "Goal! Manchester United") }
}

private func intents(_ actions: [ActivityAction]) -> [PushIntent] {
    actions.compactMap { if case .send(let intent) = $0 { intent } else { nil } }
}

@Suite("Broadcast channels: lifecycle values")
struct ChannelLifecycleTests {
    private typealias F = ChannelFixture

    @Test func aStartFromAnUpdateWithAChannelCarriesInputPushChannelAndEncodesIt() throws {
        var lifecycle = ActivityLifecycle(activityId: "act_1", matchId: "epl-mun-liv")
        let start = try #require(intents(lifecycle.matchChanged(F.update(.live, channel: F.channelId), now: F.at(0), policy: F.policy)).first)
        #expect(start.recipient == .pushToStart)
        #expect(start.aps.inputPushChannel == F.channelId)
        #expect(lifecycle.channelId == F.channelId)
        let json = try #require(try JSONSerialization.jsonObject(with: Data(PushPayload(start.aps).bytes)) as? [String: Any])
        let aps = try #require(json["aps"] as? [String: Any])
        #expect(aps["input-push-channel"] as? String == F.channelId)
        #expect(aps["event"] as? String == "start")

        // Without a channel, no such key.
        var plain = ActivityLifecycle(activityId: "act_2", matchId: "epl-mun-liv")
        let other = try #require(intents(plain.matchChanged(F.update(.live), now: F.at(0), policy: F.policy)).first)
        #expect(other.aps.inputPushChannel == nil)
        #expect(!String(decoding: try PushPayload(other.aps).bytes, as: UTF8.self).contains("input-push-channel"))
    }

    @Test func aChannelListenerSendsNothingOfItsOwnAndEndsQuietlyWithTheMatch() {
        var lifecycle = ActivityLifecycle(activityId: "act_1", matchId: "epl-mun-liv")
        _ = lifecycle.matchChanged(F.update(.live, channel: F.channelId), now: F.at(0), policy: F.policy)
        let before = lifecycle
        #expect(lifecycle.matchChanged(F.update(.live, 1, 0, keyEvents: [F.goal()], channel: F.channelId), now: F.at(60), policy: F.policy).isEmpty)
        #expect(lifecycle == before, "nothing to save per device while the channel carries the updates")
        #expect(lifecycle.tick(now: F.at(3600), policy: F.policy).isEmpty)
        #expect(lifecycle.nextDeadline(policy: F.policy) == F.at(0).addingTimeInterval(F.policy.restartAfter.seconds))
        // An update token reported later is kept (for an unfollow's end) but sends nothing.
        #expect(lifecycle.updateTokenRegistered("abcd", now: F.at(70), policy: F.policy).isEmpty)
        #expect(lifecycle.phase == .active && lifecycle.updateToken == "abcd")
        #expect(lifecycle.matchChanged(F.update(.live, 2, 0, channel: F.channelId), now: F.at(120), policy: F.policy).isEmpty)
        #expect(lifecycle.matchChanged(F.update(.completed, 2, 0, channel: F.channelId), now: F.at(200), policy: F.policy) == [.finished])
        #expect(lifecycle.phase == .ended)
    }

    @Test func aChannelListenerWithATokenGetsAnEndWhenUnfollowed() throws {
        var lifecycle = ActivityLifecycle(activityId: "act_1", matchId: "epl-mun-liv")
        _ = lifecycle.matchChanged(F.update(.live, channel: F.channelId), now: F.at(0), policy: F.policy)
        _ = lifecycle.updateTokenRegistered("abcd", now: F.at(5), policy: F.policy)
        let end = try #require(intents(lifecycle.end(.unfollowed, now: F.at(50))).first)
        #expect(end.recipient == .updateToken("abcd"))
        #expect(end.aps.event == .end)
    }

    @Test func theLifecycleRoundTripsItsChannelThroughJSON() throws {
        var lifecycle = ActivityLifecycle(activityId: "act_1", matchId: "epl-mun-liv")
        _ = lifecycle.matchChanged(F.update(.live, channel: F.channelId), now: F.at(0), policy: F.policy)
        let json = try JSON.encoder().encode(lifecycle)
        let decoded = try JSON.decoder().decode(ActivityLifecycle.self, from: json)
        #expect(decoded == lifecycle)
        #expect(decoded.channelId == F.channelId)
        // Stored under the names stored lifecycles have always had.
        let object = try #require(try JSONSerialization.jsonObject(with: json) as? [String: Any])
        #expect((object["sentContent"] as? [String: Any])?["status"] as? String == lifecycle.sentContent?.status)
        #expect(object["channelId"] as? String == F.channelId)
        #expect(object["sentBox"] == nil)
    }

    @Test func theRuleWantsALiveMatchWithEnoughFollowers() {
        #expect(F.channels.wantsChannel(status: .live, followers: 2))
        #expect(!F.channels.wantsChannel(status: .live, followers: 1))
        #expect(!F.channels.wantsChannel(status: .scheduled, followers: 100))
        #expect(!F.channels.wantsChannel(status: .completed, followers: 100))
        #expect(!ChannelPolicy(minFollowers: 0).wantsChannel(status: .live, followers: 100_000))
        #expect(ChannelPolicy(minFollowers: -3).minFollowers == 0)
    }

    @Test func aMatchChannelBroadcastsChangesButNotTheStateItWasMadeWith() throws {
        var channel = MatchChannel(
            matchId: "epl-mun-liv", channelId: F.channelId, activityId: "act_ch", current: F.update(.live), now: F.at(0), policy: F.policy)
        #expect(channel.phase == .open)
        // The same content again: the starts already showed it.
        #expect(channel.matchChanged(F.update(.live), now: F.at(5), policy: F.policy, channels: F.channels).isEmpty)
        // A goal: at once, priority 10 with an alert, to the channel.
        let goal = try #require(channel.matchChanged(F.update(.live, 1, 0, keyEvents: [F.goal()]), now: F.at(20), policy: F.policy, channels: F.channels).first)
        #expect(goal.recipient == .channel(F.channelId))
        #expect(goal.priority == 10 && goal.aps.alert != nil && goal.aps.event == .update)
        // A routine change within the coalescing interval waits for a tick.
        #expect(channel.matchChanged(F.update(.live, 1, 1), now: F.at(25), policy: F.policy, channels: F.channels).isEmpty)
        #expect(channel.nextDeadline(policy: F.policy, feedIsFresh: true) == F.at(30))
        let flushed = try #require(channel.tick(now: F.at(30), policy: F.policy, feedIsFresh: true, channels: F.channels).first)
        #expect(flushed.priority == 5 && flushed.recipient == .channel(F.channelId))
        #expect(flushed.aps.timestamp > goal.aps.timestamp)
        // Never restarted at 8 hours (the devices' activities restart on their own).
        let quiet = channel.tick(now: F.at(9 * 3600), policy: F.policy, feedIsFresh: true, channels: F.channels)
        #expect(quiet.allSatisfy { $0.aps.event == .update })
        #expect(channel.phase == .open)
    }

    @Test func theEndIsBroadcastThenTheChannelClosesAndItsDeleteBacksOff() throws {
        var channel = MatchChannel(
            matchId: "epl-mun-liv", channelId: F.channelId, activityId: "act_ch", current: F.update(.live), now: F.at(0), policy: F.policy)
        let end = try #require(channel.matchChanged(F.update(.completed, 2, 1), now: F.at(100), policy: F.policy, channels: F.channels).first)
        #expect(end.aps.event == .end && end.recipient == .channel(F.channelId))
        #expect(end.aps.dismissalDate != nil)
        #expect(channel.phase == .closing)
        #expect(channel.deleteAt == F.at(130))
        #expect(!channel.deleteIsDue(now: F.at(129)))
        #expect(channel.deleteIsDue(now: F.at(130)))
        // Closed: nothing more is sent.
        #expect(channel.matchChanged(F.update(.completed, 3, 1), now: F.at(140), policy: F.policy, channels: F.channels).isEmpty)
        #expect(channel.tick(now: F.at(200), policy: F.policy, feedIsFresh: true, channels: F.channels).isEmpty)
        #expect(channel.nextDeadline(policy: F.policy, feedIsFresh: true) == nil)
        // Failed deletes: 5 s, 10 s, 20 s, ... capped at the policy's 60 s.
        var waits: [TimeInterval] = []
        for attempt in 0..<6 {
            let moment = F.at(200 + Double(attempt) * 100)
            channel.deleteFailed(now: moment, channels: F.channels)
            waits.append(try #require(channel.deleteAt).timeIntervalSince(moment))
        }
        #expect(waits == [5, 10, 20, 40, 60, 60])
        #expect(channel.deleteAttempts == 6)
        let decoded = try JSON.decoder().decode(MatchChannel.self, from: JSON.encoder().encode(channel))
        #expect(decoded == channel)
    }

    @Test func theTrackerCarriesTheChannelOnEveryLaterUpdate() throws {
        var tracker = MatchTracker()
        let first = try #require(try tracker.ingest(F.update(.live).snapshot, pollInterval: .seconds(5)))
        #expect(first.channelId == nil)
        tracker.attach(channelId: F.channelId)
        #expect(tracker.latest?.channelId == F.channelId)
        let next = try #require(try tracker.ingest(F.update(.live, 1, 0).snapshot, pollInterval: .seconds(5)))
        #expect(next.channelId == F.channelId)
        tracker.attach(channelId: nil)
        #expect(tracker.latest?.channelId == nil)
    }

    @Test func aDeliveryToAChannelHasTheChannelTarget() throws {
        var builder = DeliveryBuilder(bundleId: "com.example.app", seed: 1)
        var channel = MatchChannel(
            matchId: "epl-mun-liv", channelId: F.channelId, activityId: "act_ch", current: F.update(.live), now: F.at(0), policy: F.policy)
        let intent = try #require(channel.matchChanged(F.update(.live, 1, 0, keyEvents: [F.goal()]), now: F.at(20), policy: F.policy, channels: F.channels).first)
        let delivery = try #require(try builder.build(intent, matchId: "epl-mun-liv", activityId: "act_ch", pushToStartToken: nil, now: F.at(20)))
        #expect(delivery.target == PushTarget(kind: .channel, value: F.channelId))
        #expect(delivery.apns.topic == "com.example.app.push-type.liveactivity")
        let line = String(decoding: delivery.jsonBytes(), as: UTF8.self)
        #expect(line.contains(#""target":{"kind":"channel","value":"\#(F.channelId)"}"#))
    }
}
