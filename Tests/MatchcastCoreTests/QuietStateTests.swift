import Foundation
import Testing
@testable import MatchcastCore

// `ActivityLifecycle.quietState`: what an event may change without sending. The manager saves an activity whose
// event sent nothing only when its quiet state moved, so equal quiet states must mean an unchanged lifecycle, and
// every quiet change (content held, an end held for the token) must move it.

private enum QuietFixture {
    static let epoch: TimeInterval = 1_776_780_000
    static let home = Team(id: "mun", name: "Manchester United", short: "MUN")
    static let away = Team(id: "liv", name: "Liverpool", short: "LIV")
    static let policy = ActivityPolicy()  // coalescing 10 s

    static func at(_ seconds: Double) -> Date { Date(timeIntervalSince1970: epoch + seconds) }

    static func update(
        _ status: MatchStatus, _ home: Int = 0, _ away: Int = 0, clock: String = "1'",
        keyEvents: [KeyEvent] = [], poll: Duration = .seconds(5)
    ) -> MatchUpdate {
        let snapshot = MatchSnapshot(
            id: "epl-mun-liv", sport: .football, status: status, competition: "Premier League",
            home: Self.home, away: Self.away,
            score: .teamTotals(TeamScore(home: home, away: away, period: "1H", clock: clock)))
        let rendered = try! MatchRenderer.render(snapshot)
        var content = rendered.contentState
        content.event = keyEvents.last?.body
        return MatchUpdate(rendered: rendered, content: content, keyEvents: keyEvents, pollInterval: poll)
    }

    static func goal() -> KeyEvent { KeyEvent(kind: .goal, title: "MUN 1-0 LIV", body: "Goal! Manchester United") }

    /// Push-started at `start` (not yet active: no update token).
    static func starting(start: Double = 0) -> ActivityLifecycle {
        var lifecycle = ActivityLifecycle(activityId: "act_1", matchId: "epl-mun-liv")
        _ = lifecycle.matchChanged(update(.live), now: at(start), policy: policy)
        precondition(lifecycle.phase == .starting)
        return lifecycle
    }

    /// Push-started at `start`, its update token registered a second later: active, nothing held.
    static func active(start: Double = 0) -> ActivityLifecycle {
        var lifecycle = starting(start: start)
        _ = lifecycle.updateTokenRegistered("tok-1", now: at(start + 1), policy: policy)
        precondition(lifecycle.phase == .active && lifecycle.held == nil)
        return lifecycle
    }
}

/// What the manager does with an event that sent nothing: the quiet states before and after, and the lifecycles.
private struct Observed {
    let actions: [ActivityAction]
    let quietBefore: ActivityLifecycle.QuietState
    let quietAfter: ActivityLifecycle.QuietState
    let before: ActivityLifecycle
    let after: ActivityLifecycle

    var quietUnchanged: Bool { quietBefore == quietAfter }
}

private func observe(_ lifecycle: inout ActivityLifecycle, _ event: (inout ActivityLifecycle) -> [ActivityAction]) -> Observed {
    let before = lifecycle
    let quietBefore = lifecycle.quietState
    let actions = event(&lifecycle)
    return Observed(actions: actions, quietBefore: quietBefore, quietAfter: lifecycle.quietState, before: before, after: lifecycle)
}

@Suite("Activity lifecycle: quiet state")
struct QuietStateTests {
    fileprivate typealias F = QuietFixture
    let policy = QuietFixture.policy

    // MARK: No change

    @Test("an update identical to what was sent changes nothing, even as a new update value")
    func identicalUpdateIsNoChange() {
        var lifecycle = F.active()
        // A fresh update with the same content (a new box, equal value): polled again, nothing new.
        let seen = observe(&lifecycle) { $0.matchChanged(F.update(.live), now: F.at(30), policy: policy) }
        #expect(seen.actions.isEmpty)
        #expect(seen.quietUnchanged)
        #expect(seen.after == seen.before, "and indeed nothing changed: skipping the save loses nothing")
    }

    @Test("an ended lifecycle takes updates, a final and a token without any change")
    func endedLifecycleIsNoChange() {
        var lifecycle = F.active()
        _ = lifecycle.matchChanged(F.update(.completed, 2, 1), now: F.at(60), policy: policy)
        #expect(lifecycle.phase == .ended)
        let events: [(inout ActivityLifecycle) -> [ActivityAction]] = [
            { $0.matchChanged(F.update(.live, 3, 1, clock: "70'"), now: F.at(70), policy: policy) },
            { $0.matchChanged(F.update(.completed, 3, 1), now: F.at(80), policy: policy) },
            { $0.updateTokenRegistered("tok-2", now: F.at(90), policy: policy) },
        ]
        for n in events.indices {
            let event = events[n]
            let seen = observe(&lifecycle) { event(&$0) }
            #expect(seen.actions.isEmpty, "event \(n)")
            #expect(seen.quietUnchanged, "event \(n)")
            #expect(seen.after == seen.before, "event \(n)")
        }
    }

    @Test("a waiting lifecycle before kick-off changes nothing")
    func waitingBeforeKickOffIsNoChange() {
        var lifecycle = ActivityLifecycle(activityId: "act_1", matchId: "epl-mun-liv")
        let seen = observe(&lifecycle) { $0.matchChanged(F.update(.scheduled), now: F.at(0), policy: policy) }
        #expect(seen.actions.isEmpty)
        #expect(seen.quietUnchanged)
        #expect(seen.after == seen.before)
    }

    @Test("the same content held again (coalesced twice, same staleness) is no change")
    func sameHeldContentAgainIsNoChange() {
        var lifecycle = F.active()
        _ = lifecycle.matchChanged(F.update(.live, clock: "2'"), now: F.at(20), policy: policy)  // sent at 20
        _ = lifecycle.matchChanged(F.update(.live, clock: "3'"), now: F.at(22), policy: policy)  // held
        #expect(lifecycle.held?.clock == "3'")
        let seen = observe(&lifecycle) { $0.matchChanged(F.update(.live, clock: "3'"), now: F.at(24), policy: policy) }
        #expect(seen.actions.isEmpty)
        #expect(seen.quietUnchanged)
        #expect(seen.after == seen.before)
    }

    // MARK: Quiet changes

    @Test("content held before the update token arrives is a quiet change")
    func contentHeldBeforeTokenIsAChange() {
        var lifecycle = F.starting()
        let seen = observe(&lifecycle) { $0.matchChanged(F.update(.live, 1, 0, clock: "12'"), now: F.at(12), policy: policy) }
        #expect(seen.actions.isEmpty)
        #expect(!seen.quietUnchanged)
        #expect(lifecycle.held?.home.score == "1")

        // A newer change held over the first: another quiet change.
        let newer = observe(&lifecycle) { $0.matchChanged(F.update(.live, 2, 0, clock: "20'"), now: F.at(20), policy: policy) }
        #expect(newer.actions.isEmpty)
        #expect(!newer.quietUnchanged)
    }

    @Test("a coalesced change (held inside the coalescing window) is a quiet change")
    func coalescedHoldIsAChange() {
        var lifecycle = F.active()
        let sent = lifecycle.matchChanged(F.update(.live, clock: "2'"), now: F.at(20), policy: policy)
        #expect(sent.count == 1)
        let seen = observe(&lifecycle) { $0.matchChanged(F.update(.live, clock: "3'"), now: F.at(25), policy: policy) }
        #expect(seen.actions.isEmpty, "inside the 10 s window")
        #expect(!seen.quietUnchanged)
        #expect(lifecycle.held?.clock == "3'")
    }

    @Test("the same held content with another staleness (the poll interval changed) is a quiet change")
    func heldStalenessChangeIsAChange() {
        var lifecycle = F.active()
        _ = lifecycle.matchChanged(F.update(.live, clock: "2'"), now: F.at(20), policy: policy)
        _ = lifecycle.matchChanged(F.update(.live, clock: "3'", poll: .seconds(5)), now: F.at(22), policy: policy)
        // 4 polls of 60 s: 240 s, above the 120 s minimum, so the held staleness moves.
        let seen = observe(&lifecycle) {
            $0.matchChanged(F.update(.live, clock: "3'", poll: .seconds(60)), now: F.at(24), policy: policy)
        }
        #expect(seen.actions.isEmpty)
        #expect(!seen.quietUnchanged)
        #expect(seen.after != seen.before)
    }

    @Test("back to what the device shows drops the held change: a quiet change")
    func heldDroppedIsAChange() {
        var lifecycle = F.active()
        _ = lifecycle.matchChanged(F.update(.live, clock: "2'"), now: F.at(20), policy: policy)  // sent
        _ = lifecycle.matchChanged(F.update(.live, 1, 0, clock: "2'"), now: F.at(22), policy: policy)  // held
        #expect(lifecycle.held != nil)
        let seen = observe(&lifecycle) { $0.matchChanged(F.update(.live, clock: "2'"), now: F.at(24), policy: policy) }
        #expect(seen.actions.isEmpty)
        #expect(lifecycle.held == nil)
        #expect(!seen.quietUnchanged)
    }

    @Test("a final before the update token holds the end: a quiet change; the same final again is none")
    func endHeldForTheTokenIsAChange() {
        var lifecycle = F.starting()
        let seen = observe(&lifecycle) { $0.matchChanged(F.update(.completed, 2, 1), now: F.at(5400), policy: policy) }
        #expect(seen.actions.isEmpty)
        #expect(lifecycle.endHeld)
        #expect(lifecycle.phase == .starting)
        #expect(!seen.quietUnchanged)

        let again = observe(&lifecycle) { $0.matchChanged(F.update(.completed, 2, 1), now: F.at(5410), policy: policy) }
        #expect(again.actions.isEmpty)
        #expect(again.quietUnchanged)
        #expect(again.after == again.before)

        // A corrected final score: the held end's content moves.
        let corrected = observe(&lifecycle) { $0.matchChanged(F.update(.completed, 2, 2), now: F.at(5420), policy: policy) }
        #expect(corrected.actions.isEmpty)
        #expect(!corrected.quietUnchanged)
    }

    @Test("an app-started activity adopted while waiting changes phase without sending: a quiet change")
    func adoptionWhileWaitingIsAChange() {
        var lifecycle = ActivityLifecycle(activityId: "act_1", matchId: "epl-mun-liv")
        let seen = observe(&lifecycle) { $0.updateTokenRegistered("tok-1", now: F.at(0), policy: policy) }
        #expect(seen.actions.isEmpty)
        #expect(lifecycle.phase == .active)
        #expect(!seen.quietUnchanged)
    }

    // MARK: The contract the manager relies on

    @Test("over a whole match, an event that sends nothing leaves the quiet state equal exactly when the lifecycle is equal")
    func quietStateEqualIffLifecycleUnchanged() {
        // Two activities: one active early, one whose token only comes after the final whistle.
        var early = F.active()
        var late = F.starting()
        var checked = 0
        var quietChanges = 0
        let script: [(Double, MatchUpdate)] = [
            (5, F.update(.live, clock: "5'")),
            (7, F.update(.live, clock: "7'")),
            (8, F.update(.live, clock: "7'")),
            (9, F.update(.live, clock: "5'")),
            (30, F.update(.live, 1, 0, clock: "30'", keyEvents: [F.goal()])),
            (31, F.update(.live, 1, 0, clock: "30'")),
            (33, F.update(.live, 1, 0, clock: "33'")),
            (34, F.update(.live, 1, 0, clock: "33'", poll: .seconds(60))),
            (35, F.update(.live, 1, 0, clock: "33'", poll: .seconds(60))),
            (60, F.update(.break, 1, 0, clock: "HT")),
            (61, F.update(.break, 1, 0, clock: "HT")),
            (5400, F.update(.completed, 1, 0)),
            (5401, F.update(.completed, 1, 0)),
            (5402, F.update(.completed, 1, 1)),
        ]
        for (t, update) in script {
            for index in 0..<2 {
                var lifecycle = index == 0 ? early : late
                let seen = observe(&lifecycle) { $0.matchChanged(update, now: F.at(t), policy: policy) }
                if seen.actions.isEmpty {
                    checked += 1
                    if !seen.quietUnchanged { quietChanges += 1 }
                    #expect(seen.quietUnchanged == (seen.after == seen.before), "activity \(index) at \(t)")
                }
                if index == 0 { early = lifecycle } else { late = lifecycle }
            }
        }
        #expect(checked > 10)
        #expect(quietChanges >= 3, "the script has quiet changes to check")
        // The late token flushes the held end.
        let end = late.updateTokenRegistered("tok-2", now: F.at(5500), policy: policy)
        #expect(end.contains(.finished))
    }
}
