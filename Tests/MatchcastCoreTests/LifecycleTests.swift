import Foundation
import Testing
@testable import MatchcastCore

// The lifecycle state machine, driven event by event with no I/O and no clock: every `Date` is
// built from a fixed epoch.

/// Fixtures for the lifecycle tests: a football match whose content changes with its score.
private enum LifecycleFixture {
    static let epoch: TimeInterval = 1_776_780_000
    static let home = Team(id: "mun", name: "Manchester United", short: "MUN")
    static let away = Team(id: "liv", name: "Liverpool", short: "LIV")
    static let policy = ActivityPolicy()

    /// `seconds` after the fixed epoch.
    static func at(_ seconds: Double) -> Date { Date(timeIntervalSince1970: epoch + seconds) }
    static func unix(_ seconds: Double) -> Int { Int(epoch + seconds) }

    static func snapshot(_ status: MatchStatus, _ home: Int = 0, _ away: Int = 0, clock: String = "1'") -> MatchSnapshot {
        MatchSnapshot(
            id: "epl-mun-liv", sport: .football, status: status, competition: "Premier League",
            home: Self.home, away: Self.away,
            score: .teamTotals(TeamScore(home: home, away: away, period: "1H", clock: clock)))
    }

    static func update(
        _ status: MatchStatus, _ home: Int = 0, _ away: Int = 0, clock: String = "1'",
        keyEvents: [KeyEvent] = [], poll: Duration = .seconds(5)
    ) -> MatchUpdate {
        let rendered = try! MatchRenderer.render(snapshot(status, home, away, clock: clock))
        var content = rendered.contentState
        content.event = keyEvents.last?.body
        return MatchUpdate(rendered: rendered, content: content, keyEvents: keyEvents, pollInterval: poll)
    }

    static func goal(_ body: String = "Goal! Manchester United") -> KeyEvent {
        KeyEvent(kind: .goal, title: "MUN 1-0 LIV", body: body)
    }

    /// A push-started activity that is active: started at `start`, token "tok-1" registered one second later.
    static func active(start: Double = 0, policy: ActivityPolicy = Self.policy) -> ActivityLifecycle {
        var lifecycle = ActivityLifecycle(activityId: "act_1", matchId: "epl-mun-liv")
        _ = lifecycle.matchChanged(update(.live), now: at(start), policy: policy)
        _ = lifecycle.updateTokenRegistered("tok-1", now: at(start + 1), policy: policy)
        precondition(lifecycle.phase == .active)
        return lifecycle
    }
}

private func intents(_ actions: [ActivityAction]) -> [PushIntent] {
    actions.compactMap { if case .send(let intent) = $0 { intent } else { nil } }
}

@Suite("Activity lifecycle")
struct LifecycleTests {
    fileprivate typealias F = LifecycleFixture
    let policy = LifecycleFixture.policy

    // MARK: Starting

    @Test func followBeforeLiveDoesNothing() {
        var lifecycle = ActivityLifecycle(activityId: "act_1", matchId: "epl-mun-liv")
        #expect(lifecycle.matchChanged(F.update(.scheduled), now: F.at(0), policy: policy).isEmpty)
        #expect(lifecycle.tick(now: F.at(3600), policy: policy).isEmpty)
        #expect(lifecycle.phase == .waiting)
        #expect(lifecycle.nextDeadline(policy: policy) == nil)
        #expect(lifecycle.lastTimestamp == 0)
    }

    @Test func goingLiveSendsOneStartToThePushToStartToken() throws {
        var lifecycle = ActivityLifecycle(activityId: "act_1", matchId: "epl-mun-liv")
        let update = F.update(.live, poll: .seconds(5))
        let actions = lifecycle.matchChanged(update, now: F.at(0.7), policy: policy)
        #expect(actions.count == 1)
        let intent = try #require(intents(actions).first)
        #expect(intent.recipient == .pushToStart)
        #expect(intent.priority == 10)
        #expect(intent.aps.event == .start)
        #expect(intent.aps.timestamp == F.unix(0))
        #expect(intent.aps.contentState == update.content)
        // 4 polls × 5 s = 20 s is below the 120 s minimum.
        #expect(intent.aps.staleDate == F.unix(0) + 120)
        #expect(intent.expiration == F.unix(0) + 30 * 60)
        #expect(intent.aps.attributesType == "MatchAttributes")
        let attributes = try #require(intent.aps.attributes)
        #expect(attributes.activityId == "act_1")
        #expect(attributes.matchId == "epl-mun-liv")
        #expect(attributes.homeName == "Manchester United")
        #expect(attributes.awayShort == "LIV")
        let alert = try #require(intent.aps.alert)
        #expect(alert.title == update.content.summary)
        #expect(alert.body == "Manchester United v Liverpool")
        #expect(intent.aps.dismissalDate == nil)
        #expect(lifecycle.phase == .starting)
    }

    @Test func aRejectedStartWaitsAgainAndStartsAfreshWithTheNextToken() throws {
        var lifecycle = ActivityLifecycle(activityId: "act_1", matchId: "epl-mun-liv")
        _ = lifecycle.matchChanged(F.update(.live), now: F.at(0), policy: policy)
        _ = lifecycle.matchChanged(F.update(.live, 1, 0), now: F.at(5), policy: policy)  // held for the token
        #expect(lifecycle.phase == .starting)
        #expect(lifecycle.startRejected().isEmpty)
        #expect(lifecycle.phase == .waiting)
        #expect(lifecycle.sentContent == nil && lifecycle.held == nil && lifecycle.startedAt == nil)
        #expect(lifecycle.nextDeadline(policy: policy) == nil)
        // The next update (or the next token, through the manager) starts it again, with what the match is now.
        let restart = try #require(intents(lifecycle.matchChanged(F.update(.live, 1, 0), now: F.at(9), policy: policy)).first)
        #expect(restart.recipient == .pushToStart)
        #expect(restart.aps.contentState == F.update(.live, 1, 0).content)
        #expect(restart.aps.timestamp == F.unix(9))
        #expect(lifecycle.phase == .starting)
    }

    @Test func aRejectedStartOfAMatchThatEndedMeanwhileEnds() {
        var lifecycle = ActivityLifecycle(activityId: "act_1", matchId: "epl-mun-liv")
        _ = lifecycle.matchChanged(F.update(.live), now: F.at(0), policy: policy)
        #expect(lifecycle.matchChanged(F.update(.completed, 2, 1), now: F.at(60), policy: policy).isEmpty)  // end held
        #expect(lifecycle.startRejected() == [.finished])
        #expect(lifecycle.phase == .ended)
        #expect(lifecycle.nextDeadline(policy: policy) == nil)
    }

    @Test func onlyAStartStillWaitingForItsTokenIsTakenBack() {
        var active = F.active()
        let before = active
        #expect(active.startRejected().isEmpty)
        #expect(active == before, "an activity whose app reported its token is on the device")
        var waiting = ActivityLifecycle(activityId: "act_1", matchId: "epl-mun-liv")
        #expect(waiting.startRejected().isEmpty)
        #expect(waiting.phase == .waiting)
    }

    @Test func startCarriesTheKeyEventAlertAndAPollBasedStaleDate() throws {
        var lifecycle = ActivityLifecycle(activityId: "act_1", matchId: "epl-mun-liv")
        let start = KeyEvent(kind: .matchStart, title: "MUN 0-0 LIV · 1H 1'", body: "Manchester United v Liverpool has started")
        let update = F.update(.live, keyEvents: [start], poll: .seconds(60))
        let intent = try #require(intents(lifecycle.matchChanged(update, now: F.at(0), policy: policy)).first)
        #expect(intent.aps.alert == APS.Alert(title: start.title, body: start.body))
        // 4 polls × 60 s = 240 s beats the 120 s minimum.
        #expect(intent.aps.staleDate == intent.aps.timestamp + 240)
    }

    @Test(arguments: [(5, 4, 120, 120), (60, 4, 120, 240), (30, 2, 45, 60), (1, 10, 7, 10)])
    func staleDateIsTheLargerOfPollsAndMinimum(poll: Int, polls: Int, minimum: Int, expected: Int) throws {
        let policy = ActivityPolicy(staleAfterPolls: polls, minimumStaleness: .seconds(minimum))
        var lifecycle = ActivityLifecycle(activityId: "act_1", matchId: "m")
        let intent = try #require(intents(lifecycle.matchChanged(F.update(.live, poll: .seconds(poll)), now: F.at(0), policy: policy)).first)
        #expect(intent.aps.staleDate == F.unix(0) + expected)
    }

    @Test func breakStartsToo() {
        var lifecycle = ActivityLifecycle(activityId: "act_1", matchId: "m")
        let actions = lifecycle.matchChanged(F.update(.break), now: F.at(0), policy: policy)
        #expect(intents(actions).map(\.aps.event) == [.start])
    }

    // MARK: Before the update token

    @Test func updatesBeforeTheTokenAreHeldLatestWins() throws {
        var lifecycle = ActivityLifecycle(activityId: "act_1", matchId: "m")
        _ = lifecycle.matchChanged(F.update(.live), now: F.at(0), policy: policy)
        #expect(lifecycle.matchChanged(F.update(.live, 1, 0, clock: "12'"), now: F.at(30), policy: policy).isEmpty)
        // A key event before the token is held too: there is nowhere to send it.
        let latest = F.update(.live, 2, 0, clock: "20'", keyEvents: [F.goal()])
        #expect(lifecycle.matchChanged(latest, now: F.at(60), policy: policy).isEmpty)
        #expect(lifecycle.tick(now: F.at(90), policy: policy).isEmpty)
        #expect(lifecycle.held == latest.content)
        #expect(lifecycle.phase == .starting)

        let actions = lifecycle.updateTokenRegistered("tok-1", now: F.at(100), policy: policy)
        #expect(actions.count == 1)
        let intent = try #require(intents(actions).first)
        #expect(intent.recipient == .updateToken("tok-1"))
        #expect(intent.aps.event == .update)
        #expect(intent.aps.contentState == latest.content)
        #expect(intent.aps.timestamp == F.unix(100))
        #expect(intent.aps.attributes == nil)
        #expect(lifecycle.phase == .active)
        #expect(lifecycle.held == nil)
        #expect(lifecycle.sentContent == latest.content)
    }

    @Test func tokenBringsNothingWhenTheHeldStateIsWhatStartSent() {
        var lifecycle = ActivityLifecycle(activityId: "act_1", matchId: "m")
        _ = lifecycle.matchChanged(F.update(.live), now: F.at(0), policy: policy)
        _ = lifecycle.matchChanged(F.update(.live), now: F.at(5), policy: policy)
        #expect(lifecycle.updateTokenRegistered("tok-1", now: F.at(6), policy: policy).isEmpty)
        #expect(lifecycle.phase == .active)
        #expect(lifecycle.held == nil)
    }

    @Test func tokenBringsNothingWhenNothingWasHeld() {
        var lifecycle = ActivityLifecycle(activityId: "act_1", matchId: "m")
        _ = lifecycle.matchChanged(F.update(.live), now: F.at(0), policy: policy)
        #expect(lifecycle.updateTokenRegistered("tok-1", now: F.at(6), policy: policy).isEmpty)
        #expect(lifecycle.updateToken == "tok-1")
    }

    // MARK: Active

    @Test func keyEventGoesOutAtOnceWithPriorityTenAndAlert() throws {
        var lifecycle = F.active()
        // One second after the start: well inside the coalescing window, yet sent now.
        let update = F.update(.live, 1, 0, clock: "2'", keyEvents: [F.goal()])
        let actions = lifecycle.matchChanged(update, now: F.at(2), policy: policy)
        let intent = try #require(intents(actions).first)
        #expect(actions.count == 1)
        #expect(intent.priority == 10)
        #expect(intent.recipient == .updateToken("tok-1"))
        #expect(intent.aps.event == .update)
        #expect(intent.aps.alert == update.alert)
        #expect(intent.aps.alert?.body == "Goal! Manchester United")
        #expect(intent.aps.contentState.event == "Goal! Manchester United")
        #expect(intent.aps.staleDate == intent.aps.timestamp + 120)
    }

    @Test func routineChangeIsCoalescedAndFlushedByTickLatestWins() throws {
        var lifecycle = F.active()  // start sent at 0
        #expect(lifecycle.matchChanged(F.update(.live, 0, 0, clock: "2'"), now: F.at(3), policy: policy).isEmpty)
        let latest = F.update(.live, 0, 0, clock: "3'", poll: .seconds(60))
        #expect(lifecycle.matchChanged(latest, now: F.at(5), policy: policy).isEmpty)
        #expect(lifecycle.held == latest.content)

        let deadline = try #require(lifecycle.nextDeadline(policy: policy))
        #expect(deadline == F.at(10))
        #expect(lifecycle.tick(now: F.at(9.9), policy: policy).isEmpty)

        let actions = lifecycle.tick(now: deadline, policy: policy)
        #expect(actions.count == 1)
        let intent = try #require(intents(actions).first)
        #expect(intent.priority == 5)
        #expect(intent.aps.alert == nil)
        #expect(intent.aps.contentState == latest.content)
        // The held update keeps its own staleness: 4 × 60 s.
        #expect(intent.aps.staleDate == F.unix(10) + 240)
        #expect(intent.expiration == intent.aps.staleDate)
        #expect(lifecycle.held == nil)
        #expect(lifecycle.tick(now: F.at(10), policy: policy).isEmpty)
    }

    @Test func routineChangeAfterTheWindowGoesOutAtPriorityFive() throws {
        var lifecycle = F.active()
        let update = F.update(.live, 0, 0, clock: "5'")
        let intent = try #require(intents(lifecycle.matchChanged(update, now: F.at(10), policy: policy)).first)
        #expect(intent.priority == 5)
        #expect(intent.aps.alert == nil)
        #expect(intent.aps.contentState == update.content)
    }

    @Test func noDeliveryWhenTheContentIsUnchanged() {
        var lifecycle = F.active()
        #expect(lifecycle.matchChanged(F.update(.live), now: F.at(30), policy: policy).isEmpty)
        #expect(intents(lifecycle.matchChanged(F.update(.live, 0, 0, clock: "9'"), now: F.at(40), policy: policy)).count == 1)
        #expect(lifecycle.matchChanged(F.update(.live, 0, 0, clock: "9'"), now: F.at(55), policy: policy).isEmpty)
        #expect(lifecycle.matchChanged(F.update(.live, 0, 0, clock: "9'", poll: .seconds(60)), now: F.at(80), policy: policy).isEmpty)
    }

    /// A change that is undone inside the coalescing window (a goal ruled out) must not be sent later.
    @Test func changeRevertedWhileHeldIsNotFlushed() {
        var lifecycle = F.active()
        _ = lifecycle.matchChanged(F.update(.live, 0, 0, clock: "2'"), now: F.at(20), policy: policy)  // sent
        #expect(lifecycle.matchChanged(F.update(.live, 1, 0, clock: "2'"), now: F.at(22), policy: policy).isEmpty)  // held
        // VAR: the score goes back to what the device already shows.
        #expect(lifecycle.matchChanged(F.update(.live, 0, 0, clock: "2'"), now: F.at(24), policy: policy).isEmpty)
        let flushed = intents(lifecycle.tick(now: F.at(30), policy: policy))
        #expect(!flushed.contains { $0.aps.contentState.home.score == "1" }, "a superseded 1-0 must not reach the device")
        #expect(lifecycle.held == nil)
    }

    @Test func timestampStrictlyGrowsWithSeveralPushesInOneSecond() {
        var lifecycle = F.active(start: 0)
        var stamps: [Int] = []
        for goals in 1...3 {
            let update = F.update(.live, goals, 0, clock: "2'", keyEvents: [F.goal("goal \(goals)")])
            stamps += intents(lifecycle.matchChanged(update, now: F.at(1.2), policy: policy)).map(\.aps.timestamp)
        }
        stamps += intents(lifecycle.matchChanged(F.update(.completed, 3, 0), now: F.at(1.9), policy: policy)).map(\.aps.timestamp)
        // The start took unix(0); the token came at 1.
        #expect(stamps == [F.unix(1), F.unix(2), F.unix(3), F.unix(4)])
        #expect(lifecycle.lastTimestamp == F.unix(4))
    }

    @Test func timestampFollowsTheClockWhenItIsAhead() {
        var lifecycle = F.active(start: 0)
        let first = intents(lifecycle.matchChanged(F.update(.live, 1, 0, keyEvents: [F.goal()]), now: F.at(500.4), policy: policy))
        #expect(first.map(\.aps.timestamp) == [F.unix(500)])
    }

    // MARK: Ending

    @Test func finalSendsEndWithDismissalAfterTheDelayThenFinished() throws {
        let policy = ActivityPolicy(dismissalDelay: .seconds(600))
        var lifecycle = F.active(policy: policy)
        let final = F.update(.completed, 2, 1)
        let actions = lifecycle.matchChanged(final, now: F.at(5000), policy: policy)
        #expect(actions.count == 2)
        #expect(actions.last == .finished)
        let intent = try #require(intents(actions).first)
        #expect(intent.aps.event == .end)
        #expect(intent.recipient == .updateToken("tok-1"))
        #expect(intent.priority == 10)
        #expect(intent.aps.dismissalDate == F.unix(5000) + 600)
        #expect(intent.aps.contentState == final.content)
        #expect(intent.aps.contentState.result == "Manchester United won 2-1")
        #expect(intent.aps.staleDate == nil)
        #expect(intent.expiration == intent.aps.timestamp + 8 * 3600)
        #expect(lifecycle.phase == .ended)
        // Nothing after the end.
        #expect(lifecycle.matchChanged(F.update(.completed, 3, 1), now: F.at(5010), policy: policy).isEmpty)
        #expect(lifecycle.tick(now: F.at(9000), policy: policy).isEmpty)
        #expect(lifecycle.updateTokenRegistered("tok-2", now: F.at(9001), policy: policy).isEmpty)
        #expect(lifecycle.end(.unfollowed, now: F.at(9002)).isEmpty)
        #expect(lifecycle.nextDeadline(policy: policy) == nil)
    }

    @Test func finalIsSentAtOnceEvenInsideTheCoalescingWindow() {
        var lifecycle = F.active()
        let actions = lifecycle.matchChanged(F.update(.abandoned), now: F.at(2), policy: policy)
        #expect(intents(actions).map(\.aps.event) == [.end])
        #expect(actions.last == .finished)
    }

    @Test func dismissalDelayIsClampedToFourHours() throws {
        let policy = ActivityPolicy(dismissalDelay: .seconds(10 * 3600))
        #expect(policy.dismissalDelay == .seconds(4 * 3600))
        #expect(ActivityPolicy(dismissalDelay: .seconds(60)).dismissalDelay == .seconds(60))
        var lifecycle = F.active(policy: policy)
        let intent = try #require(intents(lifecycle.matchChanged(F.update(.completed, 1, 1), now: F.at(100), policy: policy)).first)
        #expect(intent.aps.dismissalDate == F.unix(100) + 4 * 3600)
    }

    @Test func finalBeforeTheTokenHoldsTheEndUntilTheTokenArrives() throws {
        var lifecycle = ActivityLifecycle(activityId: "act_1", matchId: "m")
        _ = lifecycle.matchChanged(F.update(.live), now: F.at(0), policy: policy)
        let final = F.update(.completed, 0, 1)
        #expect(lifecycle.matchChanged(final, now: F.at(60), policy: policy).isEmpty)
        #expect(lifecycle.endHeld)
        #expect(lifecycle.phase == .starting)

        let actions = lifecycle.updateTokenRegistered("tok-late", now: F.at(300), policy: policy)
        #expect(actions.count == 2)
        #expect(actions.last == .finished)
        let intent = try #require(intents(actions).first)
        #expect(intent.aps.event == .end)
        #expect(intent.recipient == .updateToken("tok-late"))
        #expect(intent.aps.contentState == final.content)
        #expect(intent.aps.dismissalDate == F.unix(300) + 15 * 60)
        #expect(lifecycle.phase == .ended)
        #expect(!lifecycle.endHeld)
    }

    /// With the end held and no token coming, `nextDeadline` must not name a moment at which `tick`
    /// does nothing: a manager that sleeps until the deadline would spin on it forever.
    @Test func heldEndNeverLeavesADeadlineThatTickIgnores() {
        var lifecycle = ActivityLifecycle(activityId: "act_1", matchId: "m")
        _ = lifecycle.matchChanged(F.update(.live), now: F.at(0), policy: policy)
        _ = lifecycle.matchChanged(F.update(.completed, 1, 0), now: F.at(60), policy: policy)
        guard let deadline = lifecycle.nextDeadline(policy: policy) else { return }
        let actions = lifecycle.tick(now: deadline, policy: policy)
        let after = lifecycle.nextDeadline(policy: policy)
        #expect(!actions.isEmpty || after.map { $0 > deadline } ?? true,
                "tick at \(deadline) did nothing and the next deadline is still \(String(describing: after))")
    }

    @Test(arguments: [MatchStatus.completed, .abandoned, .postponed])
    func finalWhileWaitingFinishesWithoutSending(status: MatchStatus) {
        var lifecycle = ActivityLifecycle(activityId: "act_1", matchId: "m")
        #expect(lifecycle.matchChanged(F.update(status), now: F.at(0), policy: policy) == [.finished])
        #expect(lifecycle.phase == .ended)
        #expect(lifecycle.matchChanged(F.update(.live), now: F.at(1), policy: policy).isEmpty)
    }

    @Test func unfollowEndsWithDismissalNow() throws {
        var lifecycle = F.active()
        let actions = lifecycle.end(.unfollowed, now: F.at(700.5))
        #expect(actions.count == 2)
        #expect(actions.last == .finished)
        let intent = try #require(intents(actions).first)
        #expect(intent.aps.event == .end)
        #expect(intent.aps.dismissalDate == F.unix(700))
        #expect(intent.aps.timestamp == F.unix(700))
        #expect(intent.recipient == .updateToken("tok-1"))
        #expect(intent.priority == 10)
        #expect(intent.aps.contentState == F.update(.live).content)
        #expect(lifecycle.phase == .ended)
    }

    @Test func unfollowEndsWithTheNewestHeldContent() throws {
        var lifecycle = F.active()
        let held = F.update(.live, 0, 0, clock: "4'")
        _ = lifecycle.matchChanged(held, now: F.at(4), policy: policy)
        let intent = try #require(intents(lifecycle.end(.unfollowed, now: F.at(5))).first)
        #expect(intent.aps.contentState == held.content)
    }

    @Test func unfollowBeforeAnythingStartedJustFinishes() {
        var waiting = ActivityLifecycle(activityId: "act_1", matchId: "m")
        #expect(waiting.end(.unfollowed, now: F.at(0)) == [.finished])
        var starting = ActivityLifecycle(activityId: "act_2", matchId: "m")
        _ = starting.matchChanged(F.update(.live), now: F.at(0), policy: policy)
        #expect(starting.end(.unfollowed, now: F.at(1)) == [.finished])
    }

    @Test(arguments: [ActivityEndReason.dismissed, .tokenInvalid])
    func dismissedOrDeadTokenFinishesWithoutSending(reason: ActivityEndReason) {
        var lifecycle = F.active()
        _ = lifecycle.matchChanged(F.update(.live, 0, 0, clock: "4'"), now: F.at(4), policy: policy)  // held
        #expect(lifecycle.end(reason, now: F.at(5)) == [.finished])
        #expect(lifecycle.phase == .ended)
        #expect(lifecycle.held == nil)
        #expect(lifecycle.tick(now: F.at(60), policy: policy).isEmpty)
        #expect(lifecycle.matchChanged(F.update(.live, 1, 0, keyEvents: [F.goal()]), now: F.at(61), policy: policy).isEmpty)
        #expect(lifecycle.end(.unfollowed, now: F.at(62)).isEmpty)
    }

    // MARK: Tokens, adoption, restart, refresh

    @Test func rotatedTokenReceivesTheNextUpdates() throws {
        var lifecycle = F.active()
        #expect(lifecycle.updateTokenRegistered("tok-2", now: F.at(30), policy: policy).isEmpty)
        #expect(lifecycle.updateToken == "tok-2")
        let update = try #require(intents(lifecycle.matchChanged(F.update(.live, 1, 0, keyEvents: [F.goal()]), now: F.at(31), policy: policy)).first)
        #expect(update.recipient == .updateToken("tok-2"))
        let end = try #require(intents(lifecycle.matchChanged(F.update(.completed, 1, 0), now: F.at(32), policy: policy)).first)
        #expect(end.recipient == .updateToken("tok-2"))
    }

    @Test func rotationWithAHeldUpdateSendsItToTheNewToken() throws {
        var lifecycle = F.active()
        let held = F.update(.live, 0, 0, clock: "3'")
        _ = lifecycle.matchChanged(held, now: F.at(3), policy: policy)
        let intent = try #require(intents(lifecycle.updateTokenRegistered("tok-2", now: F.at(4), policy: policy)).first)
        #expect(intent.recipient == .updateToken("tok-2"))
        #expect(intent.aps.contentState == held.content)
    }

    @Test func adoptedActivityIsUpdatedAndEndedButNeverStarted() throws {
        var lifecycle = ActivityLifecycle.adopted(activityId: "act_app", matchId: "m", updateToken: "tok-app", now: F.at(0))
        #expect(lifecycle.phase == .active)
        #expect(lifecycle.startedAt == F.at(0))
        let first = try #require(intents(lifecycle.matchChanged(F.update(.live), now: F.at(1), policy: policy)).first)
        #expect(first.aps.event == .update)
        #expect(first.recipient == .updateToken("tok-app"))
        #expect(first.aps.attributes == nil)
        let actions = lifecycle.matchChanged(F.update(.completed, 1, 0), now: F.at(100), policy: policy)
        #expect(intents(actions).map(\.aps.event) == [.end])
        #expect(actions.last == .finished)
    }

    @Test func tokenWhileWaitingAdoptsTheActivity() throws {
        var lifecycle = ActivityLifecycle(activityId: "act_app", matchId: "m")
        #expect(lifecycle.updateTokenRegistered("tok-app", now: F.at(0), policy: policy).isEmpty)
        #expect(lifecycle.phase == .active)
        let actions = lifecycle.matchChanged(F.update(.live), now: F.at(5), policy: policy)
        #expect(intents(actions).map(\.aps.event) == [.update])
        #expect(intents(actions).map(\.recipient) == [.updateToken("tok-app")])
    }

    @Test func restartAtRestartAfterEndsAndAsksForAFreshActivity() throws {
        let policy = ActivityPolicy(restartAfter: .seconds(7200))
        var lifecycle = F.active(start: 0, policy: policy)
        // A key event keeps the activity fresh; the age is counted from the start all the same.
        _ = lifecycle.matchChanged(F.update(.live, 1, 0, keyEvents: [F.goal()]), now: F.at(7000), policy: policy)
        let deadline = try #require(lifecycle.nextDeadline(policy: policy))
        #expect(deadline <= F.at(7200))
        // Refresh ticks may come first; run them until the restart.
        var now = deadline
        var actions: [ActivityAction] = []
        while now < F.at(7200) {
            actions = lifecycle.tick(now: now, policy: policy)
            #expect(!actions.contains(.restart))
            now = try #require(lifecycle.nextDeadline(policy: policy))
        }
        #expect(now == F.at(7200))
        actions = lifecycle.tick(now: now, policy: policy)
        #expect(actions.count == 2)
        #expect(actions.last == .restart)
        let end = try #require(intents(actions).first)
        #expect(end.aps.event == .end)
        #expect(end.aps.dismissalDate == F.unix(7200))
        #expect(end.aps.contentState.home.score == "1")
        #expect(lifecycle.phase == .ended)
        #expect(lifecycle.tick(now: F.at(7300), policy: policy).isEmpty)
    }

    @Test func restartOfAnActivityThatNeverGotItsTokenSendsNothing() {
        let policy = ActivityPolicy(restartAfter: .seconds(3600))
        var lifecycle = ActivityLifecycle(activityId: "act_1", matchId: "m")
        _ = lifecycle.matchChanged(F.update(.live), now: F.at(0), policy: policy)
        #expect(lifecycle.nextDeadline(policy: policy) == F.at(3600))
        #expect(lifecycle.tick(now: F.at(3599), policy: policy).isEmpty)
        #expect(lifecycle.tick(now: F.at(3600), policy: policy) == [.restart])
        #expect(lifecycle.phase == .ended)
    }

    @Test func quietMatchGetsItsStaleDateRefreshedByTick() throws {
        var lifecycle = F.active()  // start at 0, stale-date 120
        let deadline = try #require(lifecycle.nextDeadline(policy: policy))
        #expect(deadline == F.at(60))
        #expect(lifecycle.tick(now: F.at(59), policy: policy).isEmpty)
        let actions = lifecycle.tick(now: deadline, policy: policy)
        let intent = try #require(intents(actions).first)
        #expect(actions.count == 1)
        #expect(intent.aps.event == .update)
        #expect(intent.priority == 5)
        #expect(intent.aps.contentState == F.update(.live).content)
        #expect(intent.aps.timestamp == F.unix(60))
        #expect(intent.aps.staleDate == F.unix(60) + 120)
        #expect(lifecycle.nextDeadline(policy: policy) == F.at(120))
    }

    // MARK: Persistence

    @Test func survivesACodableRoundTripMidCoalesce() throws {
        var lifecycle = F.active()
        let held = F.update(.live, 0, 0, clock: "3'", poll: .seconds(60))
        _ = lifecycle.matchChanged(held, now: F.at(3), policy: policy)
        let data = try JSONEncoder().encode(lifecycle)
        var restored = try JSONDecoder().decode(ActivityLifecycle.self, from: data)
        #expect(restored == lifecycle)
        let a = lifecycle.tick(now: F.at(10), policy: policy)
        let b = restored.tick(now: F.at(10), policy: policy)
        #expect(a == b)
        #expect(intents(b).first?.aps.staleDate == F.unix(10) + 240)
    }

    @Test("the JSON form leaves out what is not set, and keeps what is under the fields' names")
    func theJSONFormNamesWhatIsSet() throws {
        func keys(_ lifecycle: ActivityLifecycle) throws -> Set<String> {
            let object = try JSONSerialization.jsonObject(with: try JSONEncoder().encode(lifecycle)) as? [String: Any]
            return Set(try #require(object).keys)
        }
        let waiting = ActivityLifecycle(activityId: "act-1", matchId: "m1")
        #expect(waiting.sentAt == nil && waiting.startedAt == nil && waiting.sentStaleDate == nil)
        #expect(try keys(waiting) == ["activityId", "matchId", "phase", "lastTimestamp", "endHeld"])
        var coalescing = F.active()
        _ = coalescing.matchChanged(F.update(.live, 0, 0, clock: "3'", poll: .seconds(60)), now: F.at(3), policy: policy)
        #expect(coalescing.sentAt != nil && coalescing.sentStaleDate != nil && coalescing.startedAt != nil)
        #expect(try keys(coalescing).isSuperset(of: ["sentAt", "sentStaleDate", "startedAt", "held", "heldStaleness", "sentContent"]))
        #expect(try JSONDecoder().decode(ActivityLifecycle.self, from: try JSONEncoder().encode(waiting)) == waiting)
    }

    // MARK: Properties over random event sequences

    /// Random events against one activity after another (a fresh one replaces each that ends):
    /// no send after `.finished`/`.restart`, timestamps strictly grow, no update or end before a
    /// start for push-started activities, every update and end goes to the newest token.
    @Test(arguments: 0..<40)
    func randomSequencesKeepTheInvariants(seed: Int) {
        var rng = SeededGenerator(seed: UInt64(seed) &* 0x9E37_79B9 &+ 17)
        let policy = ActivityPolicy(
            coalesceInterval: .seconds(Int.random(in: 1...20, using: &rng)),
            staleAfterPolls: Int.random(in: 1...6, using: &rng),
            minimumStaleness: .seconds(Int.random(in: 30...300, using: &rng)),
            dismissalDelay: .seconds(Int.random(in: 0...20_000, using: &rng)),
            restartAfter: .seconds(Int.random(in: 600...30_000, using: &rng)))
        let statuses: [MatchStatus] = [.scheduled, .live, .live, .live, .break, .completed, .abandoned, .postponed]
        var activities = 0
        var lifecycle = ActivityLifecycle(activityId: "act_0", matchId: "m")
        var retired: ActivityLifecycle?
        var clock = 0.0
        var lastTimestamp = 0
        var started = false
        var adopted = false
        var tokens: [String] = []
        var trace: [String] = []
        var seen: [String: Int] = [:]

        for step in 0..<400 {
            switch Int.random(in: 0..<100, using: &rng) {
            case 0..<70: clock += Double(Int.random(in: 0...3, using: &rng))
            case 70..<97: clock += Double.random(in: 0...120, using: &rng)
            default: clock += Double(Int.random(in: 3600...10_000, using: &rng))
            }
            let now = LifecycleFixture.at(clock)
            let roll = Int.random(in: 0..<100, using: &rng)
            // Each event goes to the live activity and to the one that ended last: that one must stay silent.
            let event: (inout ActivityLifecycle) -> [ActivityAction]
            switch roll {
            case 0..<55:
                var status = statuses.randomElement(using: &rng)!
                if Int.random(in: 0..<10, using: &rng) < 8, status.isFinal || status == .postponed { status = .live }
                let goals = Int.random(in: 0...2, using: &rng)
                let events = Int.random(in: 0..<4, using: &rng) == 0 ? [LifecycleFixture.goal("g\(step)")] : []
                let update = LifecycleFixture.update(
                    status, goals, 0, clock: "\(Int.random(in: 1...3, using: &rng))'", keyEvents: events,
                    poll: .seconds(Int.random(in: 1...90, using: &rng)))
                trace.append("\(clock) match \(status) \(goals) ke=\(events.count)")
                event = { $0.matchChanged(update, now: now, policy: policy) }
            case 55..<67:
                let token = "tok-\(Int.random(in: 0...2, using: &rng))"
                trace.append("\(clock) token \(token)")
                if lifecycle.phase == .waiting && !started { adopted = true }
                if lifecycle.phase != .ended { tokens.append(token) }
                event = { $0.updateTokenRegistered(token, now: now, policy: policy) }
            case 67..<70:
                let reason = [ActivityEndReason.unfollowed, .dismissed, .tokenInvalid].randomElement(using: &rng)!
                trace.append("\(clock) end \(reason)")
                event = { $0.end(reason, now: now) }
            default:
                let target = Int.random(in: 0..<3, using: &rng) == 0 ? lifecycle.nextDeadline(policy: policy) : nil
                let tickAt = max(target ?? now, now)
                clock = tickAt.timeIntervalSince1970 - LifecycleFixture.epoch
                trace.append("\(clock) tick")
                event = { $0.tick(now: tickAt, policy: policy) }
            }
            let actions = event(&lifecycle)
            let context = Comment(rawValue: "seed \(seed) step \(step): \(trace.suffix(6).joined(separator: " | ")) -> \(actions)")
            if var old = retired {
                #expect(event(&old).isEmpty, "an ended activity acted; \(context)")
                retired = old
            }

            var over = false
            for (index, action) in actions.enumerated() {
                switch action {
                case .send(let intent):
                    seen["\(intent.aps.event) p\(intent.priority)", default: 0] += 1
                    #expect(intent.aps.timestamp > lastTimestamp, context)
                    lastTimestamp = intent.aps.timestamp
                    #expect(intent.aps.timestamp >= Int(now.timeIntervalSince1970), context)
                    #expect(lifecycle.lastTimestamp >= intent.aps.timestamp, context)
                    switch intent.aps.event {
                    case .start:
                        #expect(!started && !adopted, "a second start, or a start of an adopted activity; \(context)")
                        #expect(intent.recipient == .pushToStart, context)
                        #expect(intent.priority == 10, context)
                        #expect(intent.aps.attributes?.activityId == lifecycle.activityId, context)
                        started = true
                    case .update, .end:
                        #expect(started || adopted, "update or end before a start; \(context)")
                        #expect(intent.recipient == tokens.last.map { .updateToken(CompactToken($0)) }, context)
                        if intent.aps.event == .end {
                            #expect(intent.priority == 10, context)
                            #expect(intent.aps.dismissalDate.map { $0 >= intent.aps.timestamp } == true, context)
                            #expect(index + 1 < actions.count, "an end is followed by .finished or .restart; \(context)")
                        } else {
                            #expect(intent.aps.staleDate.map { $0 > intent.aps.timestamp } == true, context)
                            #expect([5, 10].contains(intent.priority), context)
                            #expect((intent.priority == 10) == (intent.aps.alert != nil), context)
                        }
                    }
                case .finished, .restart:
                    seen["\(action)", default: 0] += 1
                    #expect(index == actions.count - 1, "nothing after .finished/.restart in one batch; \(context)")
                    over = true
                }
            }
            #expect(over == (lifecycle.phase == .ended), "phase \(lifecycle.phase) after \(actions); \(context)")
            if lifecycle.phase == .ended {
                // The manager follows on with a fresh activity; timestamps are per activity.
                retired = lifecycle
                activities += 1
                lifecycle = ActivityLifecycle(activityId: "act_\(activities)", matchId: "m")
                lastTimestamp = 0
                started = false
                adopted = false
                tokens = []
            }
        }
        // The walk must have exercised the machine, not idled in `waiting`.
        #expect(seen["start p10", default: 0] > 0, "\(seen)")
        #expect(seen["update p5", default: 0] + seen["update p10", default: 0] > 0, "\(seen)")
        #expect(activities > 0, "\(seen)")
    }
}
