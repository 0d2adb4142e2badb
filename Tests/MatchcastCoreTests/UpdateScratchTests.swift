import Foundation
import Testing
@testable import MatchcastCore

// A fan-out walks its activities through one `UpdateScratch`: each activity's actions land in the same buffer, and an
// update's `aps` is the last activity's instance when it reads the same. What each activity does must not change.

/// Football updates of one match on a fixed clock (`StoredSentStateTests` uses them too).
enum ScratchFixture {
    static let epoch: TimeInterval = 1_776_780_000
    static let policy = ActivityPolicy()

    static func at(_ seconds: Double) -> Date { Date(timeIntervalSince1970: epoch + seconds) }

    static func update(_ status: MatchStatus, _ home: Int = 0, clock: String? = nil, keyEvents: [KeyEvent] = []) -> MatchUpdate {
        let snapshot = MatchSnapshot(
            id: "epl-mun-liv", sport: .football, status: status, competition: "Premier League",
            home: Team(id: "mun", name: "Manchester United", short: "MUN"),
            away: Team(id: "liv", name: "Liverpool", short: "LIV"),
            score: .teamTotals(TeamScore(home: home, away: 0, period: "1H", clock: clock ?? "\(10 + home)'")))
        let rendered = try! MatchRenderer.render(snapshot)
        var content = rendered.contentState
        content.event = keyEvents.last?.body
        return MatchUpdate(rendered: rendered, content: content, keyEvents: keyEvents, pollInterval: .seconds(5))
    }

    static func goal(_ n: Int) -> KeyEvent { KeyEvent(kind: .goal, title: "MUN \(n)-0 LIV", body: "Goal \(n)") }

    /// An active activity: started at 0, its update token registered a second later.
    static func active(_ n: Int) -> ActivityLifecycle {
        var lifecycle = ActivityLifecycle(activityId: "act_\(n)", matchId: "epl-mun-liv")
        _ = lifecycle.matchChanged(update(.live), now: at(0), policy: policy)
        _ = lifecycle.updateTokenRegistered("tok-\(n)", now: at(1), policy: policy)
        precondition(lifecycle.phase == .active)
        return lifecycle
    }

    /// The updates a match goes through: goals (key events), a routine change past the coalescing window, another
    /// within it (held back), and the final whistle.
    static let script: [(MatchUpdate, Date)] = [
        (update(.live, 1, keyEvents: [goal(1)]), at(100)),
        (update(.live, 1), at(200)),
        (update(.live, 2, keyEvents: [goal(2)]), at(300)),
        (update(.live, 3), at(301)),
        (update(.completed, 3), at(400)),
    ]
}

private func intents(_ actions: [ActivityAction]) -> [PushIntent] {
    actions.compactMap { if case .send(let intent) = $0 { intent } else { nil } }
}

@Suite("UpdateScratch: a fan-out's activities share a buffer and their aps")
struct UpdateScratchTests {
    fileprivate typealias F = ScratchFixture

    @Test("through a scratch, every activity does what it does alone: the same actions and the same state after")
    func sameActionsAsAlone() {
        var alone = (0..<3).map(F.active)
        var together = alone
        var scratch = UpdateScratch()
        for (update, now) in F.script {
            for n in alone.indices {
                let expected = alone[n].matchChanged(update, now: now, policy: F.policy)
                together[n].matchChanged(update, now: now, policy: F.policy, scratch: &scratch)
                #expect(scratch.actions == expected)
                #expect(together[n] == alone[n])
            }
        }
        #expect(alone.allSatisfy { $0.phase == .ended })
    }

    @Test("the activities of one update send one aps instance, and the builder shares one payload among them")
    func oneAPSInstancePerUpdate() throws {
        var lifecycles = (0..<4).map(F.active)
        var scratch = UpdateScratch()
        var builder = DeliveryBuilder(bundleId: "com.example.matchcast", seed: 7)
        for (update, now) in [F.script[0], F.script[1]] {
            var sent: [PushIntent] = []
            for n in lifecycles.indices {
                lifecycles[n].matchChanged(update, now: now, policy: F.policy, scratch: &scratch)
                sent += intents(scratch.actions)
            }
            try #require(sent.count == lifecycles.count)
            #expect(sent.dropFirst().allSatisfy { $0.aps.isSameInstance(as: sent[0].aps) })
            let deliveries = try sent.enumerated().map { n, intent in
                try #require(try builder.build(intent, matchId: "epl-mun-liv", activityId: "act_\(n)", pushToStartToken: nil, now: now))
            }
            #expect(deliveries.dropFirst().allSatisfy { $0.sharesCommonPart(with: deliveries[0]) })
            #expect(Set(deliveries.map(\.id)).count == deliveries.count)
        }
    }

    @Test("an activity whose push reads otherwise gets an aps of its own: another timestamp, another instance")
    func differentAPSIsNotReused() throws {
        var first = F.active(1)
        var ahead = F.active(2)
        // The second activity already pushed at 150, so at 100 its timestamp is 151, not 100.
        _ = ahead.matchChanged(F.update(.live, 5, keyEvents: [F.goal(5)]), now: F.at(150), policy: F.policy)
        var scratch = UpdateScratch()
        let update = F.update(.live, 1, keyEvents: [F.goal(1)])
        first.matchChanged(update, now: F.at(100), policy: F.policy, scratch: &scratch)
        let a = try #require(intents(scratch.actions).first)
        ahead.matchChanged(update, now: F.at(100), policy: F.policy, scratch: &scratch)
        let b = try #require(intents(scratch.actions).first)
        #expect(a.aps.timestamp == Int(F.epoch) + 100)
        #expect(b.aps.timestamp == Int(F.epoch) + 151)
        #expect(!b.aps.isSameInstance(as: a.aps))
        #expect(a.aps != b.aps)
        // The next activity at the first's timestamp takes the second's aps only if it reads the same: it does not.
        var third = F.active(3)
        third.matchChanged(update, now: F.at(100), policy: F.policy, scratch: &scratch)
        let c = try #require(intents(scratch.actions).first)
        #expect(c.aps == a.aps)
        #expect(!c.aps.isSameInstance(as: b.aps))
    }

    @Test("a start in the same scratch is never an update's aps, and leaves the buffer holding only its own actions")
    func startsAndEndsKeepTheirOwn() throws {
        var waiting = ActivityLifecycle(activityId: "act_9", matchId: "epl-mun-liv")
        var active = F.active(1)
        var scratch = UpdateScratch()
        let update = F.update(.live, 1, keyEvents: [F.goal(1)])
        active.matchChanged(update, now: F.at(100), policy: F.policy, scratch: &scratch)
        let sentUpdate = try #require(intents(scratch.actions).first)
        waiting.matchChanged(update, now: F.at(100), policy: F.policy, scratch: &scratch)
        #expect(scratch.actions.count == 1)
        let start = try #require(intents(scratch.actions).first)
        #expect(start.aps.event == .start)
        #expect(start.aps.attributes != nil)
        #expect(!start.aps.isSameInstance(as: sentUpdate.aps))
        active.matchChanged(F.update(.completed, 1), now: F.at(200), policy: F.policy, scratch: &scratch)
        #expect(scratch.actions.count == 2)
        #expect(intents(scratch.actions).first?.aps.event == .end)
    }
}

@Suite("APS and its alert: equal by value, compared by identity first")
struct APSEqualityTests {
    static let content = ContentState(status: "live", statusText: "Live", home: .init(name: "MUN", score: "1"),
                                      away: .init(name: "LIV", score: "0"), summary: "MUN 1-0 LIV")

    static func aps(alert: APS.Alert? = APS.Alert(title: "Goal", body: "MUN 1-0"), dismissal: Int? = nil) -> APS {
        APS(timestamp: 100, event: .update, contentState: content, staleDate: 400, dismissalDate: dismissal, alert: alert)
    }

    @Test("built apart, the same fields: equal and hashed alike; any one field changed: unequal")
    func equalByValue() {
        let a = Self.aps(), b = Self.aps()
        #expect(!a.isSameInstance(as: b))
        #expect(a == b)
        #expect(a.hashValue == b.hashValue)
        var channel = Self.aps()
        channel.inputPushChannel = "ch-1"
        var attributed = Self.aps()
        attributed.attributes = ActivityAttributes(activityId: "act_1", snapshot: MatchSnapshot(
            id: "m", sport: .football, status: .live, competition: nil, home: Team(id: "h", name: "Home", short: "HOM"),
            away: Team(id: "a", name: "Away", short: "AWY"), score: .teamTotals(TeamScore(home: 1, away: 0))))
        var later = Self.aps()
        later.timestamp = 101
        var otherBody = Self.aps()
        otherBody.alert?.body = "MUN 2-0"
        for other in [channel, attributed, later, otherBody, Self.aps(alert: nil), Self.aps(dismissal: 500)] {
            #expect(other != a)
            #expect(a != other)
        }
    }

    @Test("an alert's setters change one field; its JSON is the same three keys, sound left out when none")
    func alertValue() throws {
        var alert = APS.Alert(title: "Goal", body: "MUN 1-0")
        let copy = alert
        alert.title = "Own goal"
        #expect(alert.title == "Own goal" && alert.body == "MUN 1-0" && alert.sound == "default")
        #expect(copy.title == "Goal")
        #expect(alert != copy)
        alert.sound = nil
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        #expect(String(decoding: try encoder.encode(copy), as: UTF8.self) == #"{"body":"MUN 1-0","sound":"default","title":"Goal"}"#)
        #expect(String(decoding: try encoder.encode(alert), as: UTF8.self) == #"{"body":"MUN 1-0","title":"Own goal"}"#)
        let decoded = try JSONDecoder().decode(APS.Alert.self, from: Data(#"{"title":"T","body":"B"}"#.utf8))
        #expect(decoded == APS.Alert(title: "T", body: "B", sound: nil))
    }
}
