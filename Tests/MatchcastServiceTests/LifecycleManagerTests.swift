import Foundation
import MatchcastCore
import MatchcastService
import MatchcastStore
import MatchcastTesting
import Testing

private typealias F = ManagerFixtures

/// The broker core driven by hand: `LiveActivityService` + `LifecycleManager` with hand-built
/// snapshots, `tick()` called on a clock the test moves, an in-memory (or SQLite) store and a
/// capturing sink. No pollers, no ticker, no sleeps.
@Suite("lifecycle manager: starts, updates, ends, restarts")
struct LifecycleManagerTests {
    static let goal = MatchEvent(id: "g1", type: "goal", text: "GOAL! Saka 31'")
    static let secondGoal = MatchEvent(id: "g2", type: "goal", text: "GOAL! Palmer 55'")

    // MARK: 1. Push-to-start spacing

    @Test("push-to-start: one device, three live matches; starts at most one per spacing, the first at once")
    func pushToStartSpacing() async throws {
        let h = ManagerHarness(spacing: .seconds(5))
        let t0 = h.clock.now
        let token = F.pushToStart(1)
        let device = try await h.device(pushToStart: token)
        for id in ["m1", "m2", "m3"] { try await h.ingest(F.football(id)) }
        var activityIds: [String: String] = [:]
        for id in ["m1", "m2", "m3"] {
            activityIds[id] = try await h.service.follow(deviceId: device, matchId: id).activityId
        }
        #expect(h.deliveries(.start).map(\.matchId) == ["m1"], "the first start goes out at once")

        let next = try await h.tick()
        #expect(next == t0.addingTimeInterval(5), "the ticker is told when the next start may go")
        #expect(h.deliveries(.start).count == 1)

        h.clock.advance(by: 4)
        try await h.tick()
        #expect(h.deliveries(.start).count == 1, "not before the spacing has passed")

        h.clock.advance(by: 1)  // +5 s
        try await h.tick()
        #expect(h.deliveries(.start).map(\.matchId) == ["m1", "m2"])
        try await h.tick()
        #expect(h.deliveries(.start).count == 2, "the third waits for its own spacing")

        h.clock.advance(by: 4)  // +9 s
        try await h.tick()
        #expect(h.deliveries(.start).count == 2)

        h.clock.advance(by: 1)  // +10 s
        try await h.tick()
        let starts = h.deliveries(.start)
        #expect(starts.map(\.matchId) == ["m1", "m2", "m3"])
        #expect(starts.map(\.payload.aps.timestamp) == [0, 5, 10].map { Int(t0.timeIntervalSince1970) + $0 })
        for start in starts {
            #expect(start.target == PushTarget(kind: .pushToStartToken, value: token))
            #expect(start.activityId == activityIds[start.matchId])
            #expect(start.payload.aps.attributes?.activityId == activityIds[start.matchId])
            #expect(start.apns.priority == 10)
        }

        h.clock.advance(by: 30)
        try await h.tick()
        #expect(h.deliveries.count == 3, "nothing is started twice")
    }

    // MARK: 2. No push-to-start token

    @Test("no push-to-start token: nothing starts until the token arrives, then the start goes out")
    func noPushToStartToken() async throws {
        let h = ManagerHarness()
        try await h.ingest(F.football("m"))
        let device = try await h.device()
        let follow = try await h.service.follow(deviceId: device, matchId: "m")
        #expect(follow.activityState == "waiting")
        h.clock.advance(by: 10)
        try await h.tick()
        #expect(h.deliveries.isEmpty)

        let token = F.pushToStart(2)
        try await h.service.setPushToStartToken(deviceId: device, token: token, environment: .sandbox)
        let starts = h.deliveries(.start)
        try #require(starts.count == 1)
        #expect(starts[0].target == PushTarget(kind: .pushToStartToken, value: token))
        #expect(starts[0].activityId == follow.activityId)
        #expect(starts[0].payload.aps.attributes?.activityId == follow.activityId)
        #expect(h.deliveries.count == 1)
        #expect(try await h.service.follows(deviceId: device).first?.activityState == "starting")
    }

    // MARK: 3. Follow before live

    @Test("follow before kick-off: nothing until the match is live, then exactly one start")
    func followBeforeLive() async throws {
        let h = ManagerHarness()
        let device = try await h.device(pushToStart: F.pushToStart(3))
        try await h.ingest(F.football("m", .scheduled, period: nil, clock: nil))
        let follow = try await h.service.follow(deviceId: device, matchId: "m")
        #expect(follow.activityState == "waiting")
        try await h.tick()
        h.clock.advance(by: 60)
        try await h.ingest(F.football("m", .scheduled, period: nil, clock: nil, seq: 2))
        try await h.tick()
        #expect(h.deliveries.isEmpty)

        h.clock.advance(by: 60)
        try await h.ingest(F.football("m", .live, clock: "1'"))
        #expect(h.deliveries(.start).count == 1)
        #expect(h.deliveries(.start).first?.activityId == follow.activityId)
        #expect(h.deliveries(.start).first?.payload.aps.contentState.status == "live")

        for minute in 2...4 {
            h.clock.advance(by: 6)
            try await h.ingest(F.football("m", .live, clock: "\(minute)'"))
            try await h.tick()
        }
        #expect(h.deliveries.count == 1, "exactly one start, and no updates without an update token")
    }

    // MARK: 4. Updates held until the update token

    @Test("changes before the update token are held; on the token the latest state goes out once")
    func updatesHeldUntilToken() async throws {
        let h = ManagerHarness()
        let device = try await h.device(pushToStart: F.pushToStart(4))
        try await h.ingest(F.football("m", clock: "1'"))
        let activityId = try #require(try await h.service.follow(deviceId: device, matchId: "m").activityId)
        #expect(h.deliveries(.start).count == 1)

        h.clock.advance(by: 20)
        try await h.ingest(F.football("m", clock: "2'"))
        h.clock.advance(by: 20)
        try await h.ingest(F.football("m", home: 1, clock: "3'", events: [Self.goal]))
        h.clock.advance(by: 20)
        try await h.ingest(F.football("m", home: 1, clock: "4'", events: [Self.goal]))
        try await h.tick()
        #expect(h.deliveries.count == 1, "no update token yet: nothing but the start")

        let token = F.update(4)
        let view = try await h.service.putActivity(
            activityId: activityId, deviceId: device, matchId: "m", updateToken: token, environment: nil)
        #expect(view.state == "active")
        let updates = h.deliveries(.update)
        try #require(updates.count == 1, "the latest state once, not each intermediate one")
        let update = updates[0]
        #expect(update.target == PushTarget(kind: .updateToken, value: token))
        #expect(update.activityId == activityId)
        #expect(update.payload.aps.contentState.clock == "4'")
        #expect(update.payload.aps.contentState.home.score == "1")
        #expect(await h.lifecycle.latest(matchId: "m")?.content == update.payload.aps.contentState)
        #expect(update.payload.aps.timestamp > h.deliveries(.start)[0].payload.aps.timestamp)

        h.clock.advance(by: 5)
        try await h.tick()
        #expect(h.deliveries.count == 2, "nothing else is pending")
    }

    // MARK: 5. Key events and coalescing

    @Test("a goal goes out at once at priority 10 with an alert; routine changes are coalesced, latest wins")
    func keyEventsAndCoalescing() async throws {
        let h = ManagerHarness(policy: ActivityPolicy(coalesceInterval: .seconds(10)))
        try await h.ingest(F.football("m", clock: "1'"))
        let token = F.update(5)
        let (_, activityId) = try await h.activeDevice(matchId: "m", pushToStart: F.pushToStart(5), updateToken: token)

        h.clock.advance(by: 30)
        let goalTime = h.clock.now
        var mark = h.deliveries.count
        try await h.ingest(F.football("m", home: 1, clock: "31'", events: [Self.goal]))
        let goal = h.deliveries(since: mark)
        try #require(goal.count == 1)
        #expect(goal[0].payload.aps.event == .update)
        #expect(goal[0].apns.priority == 10)
        #expect(goal[0].payload.aps.alert?.body == Self.goal.text)
        #expect(goal[0].payload.aps.contentState.event == Self.goal.text)
        #expect(goal[0].target == PushTarget(kind: .updateToken, value: token))
        #expect(goal[0].activityId == activityId)

        mark = h.deliveries.count
        h.clock.advance(by: 3)
        try await h.ingest(F.football("m", home: 1, clock: "34'", events: [Self.goal]))
        h.clock.advance(by: 3)
        try await h.ingest(F.football("m", home: 1, clock: "37'", events: [Self.goal]))
        let next = try await h.tick()
        #expect(h.deliveries(since: mark).isEmpty, "routine changes within the coalesce interval are held")
        #expect(next == goalTime.addingTimeInterval(10))

        h.clock.advance(by: 3)  // +9 s
        try await h.tick()
        #expect(h.deliveries(since: mark).isEmpty)

        h.clock.advance(by: 1)  // +10 s
        try await h.tick()
        let flushed = h.deliveries(since: mark)
        try #require(flushed.count == 1, "one flush with the latest state")
        #expect(flushed[0].apns.priority == 5)
        #expect(flushed[0].payload.aps.alert == nil)
        #expect(flushed[0].payload.aps.contentState.clock == "37'")
        #expect(flushed[0].payload.aps.contentState.event == Self.goal.text, "the last key event stays on screen")
        #expect(flushed[0].payload.aps.timestamp > goal[0].payload.aps.timestamp)

        try await h.tick()
        #expect(h.deliveries(since: mark).count == 1)
    }

    @Test("ticks skip a match with nothing due yet miss nothing: the refresh of the latest send, and after a stale feed answers again")
    func ticksFollowTheLatestDeadlines() async throws {
        // Polled every 10 s: a stale-date 120 s (the minimum) after each send, refreshed when half of it is gone.
        let h = ManagerHarness()
        try await h.ingest(F.football("m", clock: "1'"))
        _ = try await h.activeDevice(matchId: "m", pushToStart: F.pushToStart(20), updateToken: F.update(20))
        h.clock.advance(by: 30)
        try await h.ingest(F.football("m", home: 1, clock: "31'", events: [Self.goal]))
        h.clock.advance(by: 30)
        let secondGoal = h.clock.now
        try await h.ingest(F.football("m", home: 2, clock: "61'", events: [Self.goal, Self.secondGoal]))
        let mark = h.deliveries.count

        let next = try await h.tick()
        #expect(next == secondGoal.addingTimeInterval(60), "the refresh of the latest send, not of the one it replaced")
        h.clock.advance(by: 59)
        try await h.tick()
        #expect(h.deliveries(since: mark).isEmpty)
        h.clock.advance(by: 1)
        try await h.tick()
        let refresh = h.deliveries(since: mark)
        try #require(refresh.count == 1, "the refresh goes out when due")
        #expect(refresh[0].payload.aps.contentState.clock == "61'")

        // The feed falls silent: no refresh, so the device shows the match as stale.
        h.clock.advance(by: 180)
        try await h.tick()
        #expect(h.deliveries(since: mark).count == 1)
        // It answers again (unchanged): the refresh that was held back goes out at the next tick.
        h.lifecycle.feedAnswered(matchId: "m")
        try await h.tick()
        #expect(h.deliveries(since: mark).count == 2)
        #expect(h.deliveries(since: mark).last?.payload.aps.contentState.clock == "61'")
    }

    // MARK: 6. Unfollow

    @Test("unfollow sends an end dismissed at once, then nothing; the follow is gone")
    func unfollowEndsAtOnce() async throws {
        let h = ManagerHarness()
        try await h.ingest(F.football("m"))
        let token = F.update(6)
        let (device, activityId) = try await h.activeDevice(matchId: "m", pushToStart: F.pushToStart(6), updateToken: token)
        h.clock.advance(by: 30)
        let mark = h.deliveries.count

        try await h.service.unfollow(deviceId: device, matchId: "m")
        let ends = h.deliveries(since: mark)
        try #require(ends.count == 1)
        #expect(ends[0].payload.aps.event == .end)
        #expect(ends[0].target == PushTarget(kind: .updateToken, value: token))
        #expect(ends[0].activityId == activityId)
        #expect(ends[0].payload.aps.dismissalDate == h.clock.unix, "dismissed now")
        #expect(try await h.service.follows(deviceId: device).isEmpty)

        h.clock.advance(by: 10)
        try await h.ingest(F.football("m", home: 1, clock: "41'", events: [Self.goal]))
        h.clock.advance(by: 120)
        try await h.tick()
        try await h.service.unfollow(deviceId: device, matchId: "m")
        #expect(h.deliveries(since: mark).count == 1, "nothing after the end, and unfollow is idempotent")
    }

    // MARK: 7. Dismissed by the user

    @Test("deleteActivity (user dismissed) sends no end and nothing after; another device cannot delete it")
    func dismissedByUser() async throws {
        let h = ManagerHarness()
        try await h.ingest(F.football("m"))
        let (device, activityId) = try await h.activeDevice(matchId: "m", pushToStart: F.pushToStart(7), updateToken: F.update(7))
        let intruder = try await h.device()
        let mark = h.deliveries.count

        let forbidden = await #expect(throws: ServiceError.self) {
            try await h.service.deleteActivity(activityId: activityId, deviceId: intruder)
        }
        #expect(forbidden?.code == .forbidden)
        #expect(try await h.store.activity(id: activityId)?.phase == .active, "the refused delete changed nothing")

        let missing = await #expect(throws: ServiceError.self) {
            try await h.service.deleteActivity(activityId: "no-such-activity", deviceId: device)
        }
        #expect(missing?.code == .notFound)

        try await h.service.deleteActivity(activityId: activityId, deviceId: device)
        #expect(h.deliveries(since: mark).isEmpty, "no end for a dismissed activity")
        #expect(try await h.store.activity(id: activityId)?.phase == .ended)

        h.clock.advance(by: 30)
        try await h.ingest(F.football("m", home: 1, clock: "31'", events: [Self.goal]))
        h.clock.advance(by: 600)
        try await h.tick()
        try await h.ingest(F.football("m", .completed, home: 1, clock: "90'"))
        #expect(h.deliveries(since: mark).isEmpty, "nothing after a dismissal")
    }

    // MARK: 8. Dead tokens

    @Test("a dead update token ends its activity; an unknown token is reported unknown; a dead push-to-start token is removed")
    func deadTokens() async throws {
        let h = ManagerHarness()
        try await h.ingest(F.football("m"))
        let pushToStart = F.pushToStart(8)
        let token = F.update(8)
        let (device, activityId) = try await h.activeDevice(matchId: "m", pushToStart: pushToStart, updateToken: token)
        let mark = h.deliveries.count

        #expect(try await h.service.reportDeadToken(token, reason: "Unregistered") == true)
        #expect(try await h.store.activity(id: activityId)?.phase == .ended)
        #expect(h.deliveries(since: mark).isEmpty, "nothing can reach a dead token, not even an end")
        h.clock.advance(by: 30)
        try await h.ingest(F.football("m", home: 1, clock: "31'", events: [Self.goal]))
        h.clock.advance(by: 600)
        try await h.tick()
        #expect(h.deliveries(since: mark).isEmpty)

        #expect(try await h.service.reportDeadToken(F.update(999), reason: "BadDeviceToken") == false)
        #expect(try await h.service.reportDeadToken(token, reason: "Unregistered") == false, "already dead")

        #expect(try await h.service.reportDeadToken(pushToStart, reason: "Unregistered") == true)
        #expect(try await h.store.pushToStartToken(deviceId: device) == nil)
        try await h.ingest(F.football("m2"))
        let follow = try await h.service.follow(deviceId: device, matchId: "m2")
        #expect(follow.activityState == "waiting", "no token, no start")
        #expect(h.deliveries(since: mark).isEmpty)
    }

    // MARK: 9. Adoption

    @Test("the app's own activity replaces the broker's waiting one, which is never started, and gets the current state")
    func adoptionReplacesWaitingActivity() async throws {
        let h = ManagerHarness()
        let device = try await h.device(pushToStart: F.pushToStart(9))
        try await h.ingest(F.football("m", .scheduled, period: nil, clock: nil))
        let waiting = try #require(try await h.service.follow(deviceId: device, matchId: "m").activityId)

        let token = F.update(9)
        let view = try await h.service.putActivity(
            activityId: "app-act-9", deviceId: device, matchId: "m", updateToken: token, environment: nil)
        #expect(view.activityId == "app-act-9")
        #expect(view.state == "active")
        let adopted = h.deliveries
        try #require(adopted.count == 1, "the adopted activity is brought up to date at once")
        #expect(adopted[0].payload.aps.event == .update)
        #expect(adopted[0].activityId == "app-act-9")
        #expect(adopted[0].target == PushTarget(kind: .updateToken, value: token))
        #expect(await h.lifecycle.latest(matchId: "m")?.content == adopted[0].payload.aps.contentState)
        #expect(adopted[0].payload.aps.alert == nil)
        #expect(try await h.store.activity(id: waiting)?.phase == .ended)
        let follows = try await h.service.follows(deviceId: device)
        #expect(follows.map(\.activityId) == ["app-act-9"])

        // Kick-off: the adopted activity is updated, the replaced one is never started.
        h.clock.advance(by: 60)
        try await h.ingest(F.football("m", .live, clock: "1'"))
        h.clock.advance(by: 10)
        try await h.tick()
        try await h.service.setPushToStartToken(deviceId: device, token: F.pushToStart(90), environment: .production)
        h.clock.advance(by: 10)
        try await h.tick()
        #expect(h.deliveries(.start).isEmpty, "no start ever for the replaced activity")
        #expect(!h.deliveries.contains { $0.activityId == waiting })
        let live = h.deliveries(.update, since: 1)
        #expect(live.count == 1)
        #expect(live.first?.activityId == "app-act-9")
        #expect(live.first?.payload.aps.contentState.status == "live")
    }

    // MARK: 10. Update token conflict

    @Test("an update token held by another open activity is a conflict")
    func updateTokenConflict() async throws {
        let h = ManagerHarness()
        try await h.ingest(F.football("m"))
        let token = F.update(10)
        let (owner, ownerActivity) = try await h.activeDevice(matchId: "m", pushToStart: F.pushToStart(10), updateToken: token)
        let other = try await h.device()

        let adopted = await #expect(throws: ServiceError.self) {
            try await h.service.putActivity(
                activityId: "app-act-10", deviceId: other, matchId: "m", updateToken: token, environment: .production)
        }
        #expect(adopted?.code == .conflict)
        #expect(try await h.store.activity(id: "app-act-10") == nil)

        // The same device, a second activity of its own with the token of the first: also a conflict.
        let second = await #expect(throws: ServiceError.self) {
            try await h.service.putActivity(
                activityId: "app-act-10b", deviceId: owner, matchId: "m2", updateToken: token, environment: .production)
        }
        #expect(second?.code == .conflict)

        // Re-registering the same token for the same activity is not a conflict.
        let again = try await h.service.putActivity(
            activityId: ownerActivity, deviceId: owner, matchId: "m", updateToken: token, environment: .production)
        #expect(again.state == "active")
        #expect(try await h.store.activity(updateToken: token)?.activityId == ownerActivity)
    }

    // MARK: 11. Final

    @Test("a final match sends exactly one end per activity, then nothing; it is no longer polled")
    func finalMatchEndsOnce() async throws {
        let h = ManagerHarness(policy: ActivityPolicy(coalesceInterval: .seconds(10), dismissalDelay: .seconds(900)))
        try await h.ingest(F.football("m"))
        let tokenA = F.update(11)
        let (deviceA, activityA) = try await h.activeDevice(matchId: "m", pushToStart: F.pushToStart(11), updateToken: tokenA)
        let deviceB = try await h.device()
        let tokenB = F.update(12)
        _ = try await h.service.putActivity(
            activityId: "app-act-11", deviceId: deviceB, matchId: "m", updateToken: tokenB, environment: .production)
        let deviceC = try await h.device()
        _ = try await h.service.follow(deviceId: deviceC, matchId: "other")
        #expect(try await h.lifecycle.matchesToPoll() == ["m", "other"])

        h.clock.advance(by: 5400)
        let mark = h.deliveries.count
        try await h.ingest(F.football("m", .completed, home: 2, away: 1, period: "FT", clock: "90+4'"))
        let ends = h.deliveries(since: mark)
        #expect(ends.count == 2)
        #expect(ends.allSatisfy { $0.payload.aps.event == .end })
        #expect(Set(ends.map(\.activityId)) == [activityA, "app-act-11"])
        #expect(ends.first { $0.activityId == activityA }?.target == PushTarget(kind: .updateToken, value: tokenA))
        #expect(ends.first { $0.activityId == "app-act-11" }?.target == PushTarget(kind: .updateToken, value: tokenB))
        for end in ends {
            #expect(end.apns.priority == 10)
            #expect(end.payload.aps.dismissalDate == h.clock.unix + 900)
            #expect(end.payload.aps.contentState.status == "completed")
            #expect(end.payload.aps.contentState.result == "Arsenal won 2-1")
        }
        #expect(try await h.lifecycle.matchesToPoll() == ["other"])
        #expect(await h.lifecycle.isFinal(matchId: "m"))

        h.clock.advance(by: 60)
        try await h.ingest(F.football("m", .completed, home: 2, away: 2, period: "FT", clock: "90+4'"))
        try await h.ingest(F.football("m", .live, home: 3, away: 2, clock: "90+5'"))
        h.clock.advance(by: 3600)
        try await h.tick()
        #expect(h.deliveries(since: mark).count == 2, "nothing after the end")
        #expect(try await h.service.follows(deviceId: deviceA).first?.activityId == nil)
    }

    // MARK: 12. Stale snapshots

    @Test("a snapshot with a lower seq is stale and ignored")
    func staleSnapshotIgnored() async throws {
        let h = ManagerHarness()
        try await h.ingest(F.football("m", clock: "1'", seq: 1))
        let token = F.update(12)
        _ = try await h.activeDevice(matchId: "m", pushToStart: F.pushToStart(12), updateToken: token)
        h.clock.advance(by: 30)
        try await h.ingest(F.football("m", home: 1, clock: "31'", seq: 10, events: [Self.goal]))
        let mark = h.deliveries.count

        h.clock.advance(by: 20)
        try await h.ingest(F.football("m", home: 0, clock: "20'", seq: 9))
        h.clock.advance(by: 20)
        try await h.ingest(F.football("m", home: 2, clock: "29'", seq: 9, events: [Self.goal, Self.secondGoal]))
        try await h.tick()
        #expect(h.deliveries(since: mark).isEmpty)
        #expect(await h.lifecycle.latest(matchId: "m")?.content.home.score == "1")
        #expect(await h.lifecycle.latest(matchId: "m")?.snapshot.seq == 10)

        try await h.ingest(F.football("m", home: 2, clock: "55'", seq: 11, events: [Self.goal, Self.secondGoal]))
        let fresh = h.deliveries(since: mark)
        #expect(fresh.count == 1)
        #expect(fresh.first?.apns.priority == 10)
        #expect(fresh.first?.payload.aps.contentState.home.score == "2")
    }

    // MARK: 13. Restart on a SQLite file

    /// First life on a SQLite file: device A active (start, token, a goal, a routine update);
    /// device B started after the goal but never reported its update token.
    private func firstLife(path: String, clock: ManagerTestClock, lastChangeHeld: Bool) async throws -> (ManagerHarness, SQLiteStore, String) {
        let store = try SQLiteStore(path: path)
        let h = ManagerHarness(store: store, clock: clock, seed: 1)
        try await h.ingest(F.football("m", clock: "1'", seq: 1))
        let (_, activityA) = try await h.activeDevice(matchId: "m", pushToStart: F.pushToStart(13), updateToken: F.update(13))
        clock.advance(by: 30)
        try await h.ingest(F.football("m", home: 1, clock: "31'", seq: 2, events: [Self.goal]))
        let deviceB = try await h.device(pushToStart: F.pushToStart(14))
        _ = try await h.service.follow(deviceId: deviceB, matchId: "m")
        #expect(h.deliveries(.start).count == 2)
        clock.advance(by: lastChangeHeld ? 3 : 15)
        try await h.ingest(F.football("m", home: 1, clock: "46'", seq: 3, events: [Self.goal]))
        let updatesToA = h.deliveries(.update).filter { $0.activityId == activityA }
        #expect(updatesToA.count == (lastChangeHeld ? 1 : 2))
        return (h, store, activityA)
    }

    private static func temporaryDatabase() -> String {
        FileManager.default.temporaryDirectory.appendingPathComponent("matchcast-lifecycle-\(UUID().uuidString).sqlite").path
    }

    private static func removeDatabase(_ path: String) {
        for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) }
    }

    @Test("restart on the same SQLite file when the devices are up to date: no second start, nothing sent")
    func restartUpToDateSendsNothing() async throws {
        let path = Self.temporaryDatabase()
        defer { Self.removeDatabase(path) }
        let clock = ManagerTestClock()
        let (_, store, _) = try await firstLife(path: path, clock: clock, lastChangeHeld: false)
        try store.close()

        clock.advance(by: 60)
        let reopened = try SQLiteStore(path: path)
        defer { try? reopened.close() }
        let second = ManagerHarness(store: reopened, clock: clock, seed: 2)
        try await second.lifecycle.restore()
        #expect(second.deliveries.isEmpty, "no second start, no needless update")
        try await second.tick()
        #expect(second.deliveries.isEmpty)
        #expect(try await second.lifecycle.matchesToPoll() == ["m"])
    }

    @Test("restart on the same SQLite file with a newer stored state: exactly one catch-up update, no second start")
    func restartCatchesUp() async throws {
        let path = Self.temporaryDatabase()
        defer { Self.removeDatabase(path) }
        let clock = ManagerTestClock()
        let (first, store, activityA) = try await firstLife(path: path, clock: clock, lastChangeHeld: true)
        let lastSent = try #require(first.deliveries.last { $0.activityId == activityA })
        #expect(lastSent.payload.aps.contentState.clock == "31'", "the 46' change was held by coalescing")
        try store.close()

        clock.advance(by: 60)
        let reopened = try SQLiteStore(path: path)
        defer { try? reopened.close() }
        let second = ManagerHarness(store: reopened, clock: clock, seed: 2)
        try await second.lifecycle.restore()
        let catchUp = second.deliveries
        try #require(catchUp.count == 1, "exactly one catch-up update")
        #expect(catchUp[0].payload.aps.event == .update)
        #expect(catchUp[0].activityId == activityA)
        #expect(catchUp[0].target == PushTarget(kind: .updateToken, value: F.update(13)))
        #expect(catchUp[0].payload.aps.contentState.clock == "46'")
        #expect(catchUp[0].payload.aps.contentState.event == Self.goal.text)
        #expect(catchUp[0].payload.aps.timestamp > lastSent.payload.aps.timestamp)
        try await second.tick()
        clock.advance(by: 5)
        try await second.tick()
        #expect(second.deliveries.count == 1)
        #expect(second.deliveries(.start).isEmpty)
    }

    // MARK: 14. Fan-out

    @Test("fan-out: 2,000 followers, one goal, 2,000 deliveries sharing one payload", .timeLimit(.minutes(5)))
    func fanOut() async throws {
        let h = ManagerHarness()
        try await h.ingest(F.football("m", clock: "1'"))
        var activityIds: Set<String> = []
        for n in 0..<2000 {
            let (_, activityId) = try await h.activeDevice(matchId: "m", pushToStart: F.pushToStart(n), updateToken: F.update(n))
            activityIds.insert(activityId)
        }
        #expect(h.deliveries(.start).count == 2000)
        #expect(activityIds.count == 2000)

        h.clock.advance(by: 30)
        let mark = h.deliveries.count
        try await h.ingest(F.football("m", home: 1, clock: "31'", events: [Self.goal]))
        let goal = h.deliveries(since: mark)
        #expect(goal.count == 2000)
        #expect(Set(goal.map(\.payload.bytes)).count == 1, "one payload, encoded once, shared by every delivery")
        #expect(Set(goal.map(\.id)).count == 2000)
        #expect(Set(goal.map(\.activityId)) == activityIds)
        #expect(Set(goal.map(\.target.value)) == Set((0..<2000).map(F.update)))
        #expect(goal.allSatisfy { $0.apns.priority == 10 && $0.payload.aps.event == .update })
    }

    // MARK: 15. Unrenderable snapshot

    @Test("a snapshot that cannot be rendered is skipped without throwing and without stopping other matches")
    func unrenderableSnapshotSkipped() async throws {
        let h = ManagerHarness()
        let straightSets = String(repeating: "H", count: 48)  // 6-0 6-0: the match is over
        try await h.ingest(F.tennis("t", points: String(repeating: "H", count: 40)))
        try await h.ingest(F.football("f"))
        let tennisToken = F.update(150)
        _ = try await h.activeDevice(matchId: "t", pushToStart: F.pushToStart(150), updateToken: tennisToken)
        _ = try await h.activeDevice(matchId: "f", pushToStart: F.pushToStart(151), updateToken: F.update(151))
        let before = await h.lifecycle.latest(matchId: "t")
        h.clock.advance(by: 30)
        let mark = h.deliveries.count

        try await h.ingest(F.tennis("t", points: straightSets + "A"))
        try await h.ingest(F.tennis("t", .completed, points: straightSets + "HH"))
        #expect(h.deliveries(since: mark).isEmpty)
        #expect(await h.lifecycle.latest(matchId: "t") == before, "the bad snapshot changed nothing")

        try await h.ingest(F.football("f", home: 1, clock: "31'", events: [Self.goal]))
        #expect(h.deliveries(since: mark).map(\.matchId) == ["f"], "other matches go on")

        try await h.ingest(F.tennis("t", .completed, points: straightSets))
        let ends = h.deliveries(since: mark).filter { $0.matchId == "t" }
        #expect(ends.map(\.payload.aps.event) == [.end], "the match itself goes on after a bad snapshot")
        #expect(ends.first?.target.value == tennisToken)
    }

    // MARK: 16. Bad input

    @Test("bad input to the facade: bad hex tokens, ids too long, wrong device secrets")
    func badInput() async throws {
        let h = ManagerHarness()
        try await h.ingest(F.football("m"))
        let registration = try await h.service.registerDevice()
        let device = registration.deviceId
        let longId = String(repeating: "x", count: 129)

        for bad in ["", "xyz", "abc", String(repeating: "a", count: 31), String(repeating: "zz", count: 32),
                    String(repeating: "ab", count: 101), String(repeating: "ab", count: 31) + "a b"] {
            let error = await #expect(throws: ServiceError.self, "token \(bad.debugDescription)") {
                try await h.service.setPushToStartToken(deviceId: device, token: bad, environment: .production)
            }
            #expect(error?.code == .invalidRequest)
        }
        let badUpdate = await #expect(throws: ServiceError.self) {
            try await h.service.putActivity(
                activityId: "a1", deviceId: device, matchId: "m", updateToken: "not-hex", environment: nil)
        }
        #expect(badUpdate?.code == .invalidRequest)
        #expect(badUpdate?.message.contains("updateToken") == true)
        let badDead = await #expect(throws: ServiceError.self) {
            try await h.service.reportDeadToken("0x1234", reason: "Unregistered")
        }
        #expect(badDead?.code == .invalidRequest)

        let longFollow = await #expect(throws: ServiceError.self) {
            try await h.service.follow(deviceId: device, matchId: longId)
        }
        #expect(longFollow?.code == .invalidRequest)
        let slashFollow = await #expect(throws: ServiceError.self) {
            try await h.service.follow(deviceId: device, matchId: "m/../x")
        }
        #expect(slashFollow?.code == .invalidRequest)
        let longUnfollow = await #expect(throws: ServiceError.self) {
            try await h.service.unfollow(deviceId: device, matchId: longId)
        }
        #expect(longUnfollow?.code == .invalidRequest)
        let longActivity = await #expect(throws: ServiceError.self) {
            try await h.service.putActivity(
                activityId: longId, deviceId: device, matchId: "m", updateToken: F.update(16), environment: nil)
        }
        #expect(longActivity?.code == .invalidRequest)
        #expect(longActivity?.message.contains("activityId") == true)
        let longMatch = await #expect(throws: ServiceError.self) {
            try await h.service.putActivity(
                activityId: "a1", deviceId: device, matchId: longId, updateToken: F.update(16), environment: nil)
        }
        #expect(longMatch?.code == .invalidRequest)
        let longDelete = await #expect(throws: ServiceError.self) {
            try await h.service.deleteActivity(activityId: longId, deviceId: device)
        }
        #expect(longDelete?.code == .invalidRequest)
        let longMatchView = await #expect(throws: ServiceError.self) {
            try await h.service.match(id: longId)
        }
        #expect(longMatchView?.code == .invalidRequest)

        let other = try await h.service.registerDevice()
        let secret = registration.deviceSecret
        let wrongSecrets = [
            "", "no-dot-at-all", device + ".wrong", device + "." + String(secret.split(separator: ".").last!.reversed()),
            other.deviceId + "." + secret.split(separator: ".").last!, "dev_unknown." + secret.split(separator: ".").last!,
            secret + "x", String(repeating: "a", count: 300) + "." + "b", device + "/.x",
        ]
        for wrong in wrongSecrets {
            let error = await #expect(throws: ServiceError.self, "secret \(wrong.prefix(40).debugDescription)") {
                try await h.service.authenticateDevice(secret: wrong)
            }
            #expect(error?.code == .unauthorized)
        }
        #expect(try await h.service.authenticateDevice(secret: secret) == device)

        #expect(h.deliveries.isEmpty)
        #expect(try await h.service.follows(deviceId: device).isEmpty, "refused requests changed nothing")
        #expect(try await h.store.pushToStartToken(deviceId: device) == nil)
    }

    // MARK: Beyond the list: bugs found while testing

    /// Was a bug (fixed): `LiveActivityService.putActivity` recorded the follow (`ensureFollow`) before
    /// `registerUpdateToken` refuses the request, so a 409/403 still subscribes the device.
    @Test("a refused putActivity (token conflict, another device's activity) leaves no follow behind")
    func refusedPutActivityLeavesNoFollow() async throws {
        let h = ManagerHarness()
        try await h.ingest(F.football("m"))
        let token = F.update(20)
        let (_, ownerActivity) = try await h.activeDevice(matchId: "m", pushToStart: F.pushToStart(20), updateToken: token)
        let other = try await h.device()

        let conflict = await #expect(throws: ServiceError.self) {
            try await h.service.putActivity(
                activityId: "app-act-20", deviceId: other, matchId: "m", updateToken: token, environment: .production)
        }
        #expect(conflict?.code == .conflict)
        let forbidden = await #expect(throws: ServiceError.self) {
            try await h.service.putActivity(
                activityId: ownerActivity, deviceId: other, matchId: "elsewhere", updateToken: F.update(21), environment: .production)
        }
        #expect(forbidden != nil)
        #expect(try await h.service.follows(deviceId: other).isEmpty, "a refused request must not subscribe the device")
        #expect(try await h.lifecycle.matchesToPoll() == ["m"])
    }

    /// Was a bug (fixed): `LifecycleManager.ingest` committed the tracker (`matches[snapshot.id] = state`)
    /// before `saveMatch`; when the save throws, the same snapshot polled again is "unchanged" and the
    /// goal never reaches the device (nor the store).
    @Test("a store failure while saving the match does not lose the update", .timeLimit(.minutes(1)))
    func storeFailureDoesNotLoseUpdate() async throws {
        let store = ManagerScriptedStore()
        let h = ManagerHarness(store: store)
        try await h.ingest(F.football("m", clock: "1'"))
        let token = F.update(30)
        _ = try await h.activeDevice(matchId: "m", pushToStart: F.pushToStart(30), updateToken: token)
        h.clock.advance(by: 30)
        let mark = h.deliveries.count

        store.saveMatchFailures.withLock { $0 = 1 }
        let goal = F.football("m", home: 1, clock: "31'", events: [Self.goal])
        do {
            try await h.ingest(goal)
        } catch let error as ServiceError {
            #expect(error.code == .unavailable)
        }
        #expect(store.saveMatchFailures.withLock { $0 } == 0, "the failure was hit")

        // The feed answers again with the same state; the store is back.
        h.clock.advance(by: 10)
        try await h.ingest(goal)
        h.clock.advance(by: 10)
        try await h.tick()
        let delivered = h.deliveries(since: mark)
        #expect(delivered.contains { $0.payload.aps.contentState.home.score == "1" },
                "the goal must reach the device once the store recovers")
        #expect(try await store.match(id: "m")?.snapshot.score == goal.score, "and the stored match must catch up")
    }

    /// Was a bug: the fan-out worked on copies taken before it awaited the store, so a rotation saved
    /// meanwhile was overwritten with the old token. Commands now run one at a time.
    @Test("a token rotation that lands while a fan-out waits on the store is not undone", .timeLimit(.minutes(1)))
    func tokenRotationDuringFanOut() async throws {
        let store = ManagerScriptedStore()
        let h = ManagerHarness(store: store)
        try await h.ingest(F.football("m", clock: "1'"))
        // A device without a push-to-start token: its waiting activity makes the fan-out ask the
        // store, and its id ("act_…") sorts before the adopted one's ("zz-…").
        let waitingDevice = try await h.device()
        _ = try await h.service.follow(deviceId: waitingDevice, matchId: "m")
        let device = try await h.device()
        let oldToken = F.update(40)
        let newToken = F.update(41)
        _ = try await h.service.putActivity(
            activityId: "zz-app-act", deviceId: device, matchId: "m", updateToken: oldToken, environment: .production)
        h.clock.advance(by: 30)
        let mark = h.deliveries.count

        let gate = store.pushToStartGate
        gate.arm()
        let fanOut = Task { try await h.ingest(F.football("m", home: 1, clock: "31'", events: [Self.goal])) }
        let watcher = Task { _ = await fanOut.result; gate.dismantle() }
        await gate.waitUntilHit()
        // The app rotates the update token while the fan-out is suspended. Commands are serial: the
        // rotation waits for the fan-out, then applies, and nothing writes the old token back.
        let rotation = Task {
            try await h.service.putActivity(
                activityId: "zz-app-act", deviceId: device, matchId: "m", updateToken: newToken, environment: .production)
        }
        for _ in 0..<200 { await Task.yield() }
        gate.release()
        try await fanOut.value
        _ = try await rotation.value
        await watcher.value

        let goal = h.deliveries(since: mark)
        #expect(goal.map(\.target.value) == [oldToken],
                "the goal was fanned out before the rotation was handled, to the token valid then")
        #expect(try await store.activity(id: "zz-app-act")?.updateToken == newToken, "the rotation is not overwritten")
        h.clock.advance(by: 30)
        let later = h.deliveries.count
        try await h.ingest(F.football("m", home: 2, clock: "61'", events: [Self.goal, Self.secondGoal]))
        #expect(h.deliveries(since: later).map(\.target.value) == [newToken])
    }

    /// Was a bug: a second follow arriving while the first awaited `saveActivity` created a second
    /// activity (two starts, two Live Activities). Commands now run one at a time.
    @Test("the same follow twice at once (a client retry) makes one activity and one start", .timeLimit(.minutes(1)))
    func concurrentFollowsMakeOneActivity() async throws {
        let store = ManagerScriptedStore()
        let h = ManagerHarness(store: store)
        try await h.ingest(F.football("m"))
        let device = try await h.device(pushToStart: F.pushToStart(50))

        let gate = store.saveActivityGate
        gate.arm()
        let first = Task { try await h.service.follow(deviceId: device, matchId: "m") }
        let watcher = Task { _ = await first.result; gate.dismantle() }
        await gate.waitUntilHit()
        let retryTask = Task { try await h.service.follow(deviceId: device, matchId: "m") }
        for _ in 0..<200 { await Task.yield() }
        gate.release()
        let original = try await first.value
        let retry = try await retryTask.value
        await watcher.value
        for _ in 0..<4 {
            h.clock.advance(by: 5)
            try await h.tick()
        }

        let open = try await h.store.activities(deviceId: device).filter(\.isOpen)
        #expect(open.count == 1, "follow is idempotent: one open activity per device and match")
        #expect(original.activityId == retry.activityId)
        #expect(h.deliveries(.start).count == 1, "one Live Activity on the device, not two")
    }

    /// Was a bug (fixed): `restore` resumed each match's tracker with the event text of an arbitrary open
    /// activity (`compactMap(...).first` over a dictionary), so an up-to-date device can be sent a
    /// catch-up whose event goes back to "has started".
    @Test("restore keeps the event text the devices last got, whichever activity it reads first")
    func restoreKeepsLatestEventText() async throws {
        // Each match: one active device that got the goal, seven started before the goal that never
        // reported an update token (their last content still says "has started"). Restore picks the
        // event text of an arbitrary open activity; five matches make a lucky pass near impossible.
        let store = InMemoryStore()
        let clock = ManagerTestClock()
        let first = ManagerHarness(store: store, clock: clock, seed: 1)
        let matchIds = (1...5).map { "m\($0)" }
        var n = 0
        for matchId in matchIds {
            try await first.ingest(F.football(matchId, clock: "1'"))
            _ = try await first.activeDevice(matchId: matchId, pushToStart: F.pushToStart(n), updateToken: F.update(n))
            n += 1
            for _ in 0..<7 {
                let device = try await first.device(pushToStart: F.pushToStart(n))
                _ = try await first.service.follow(deviceId: device, matchId: matchId)
                n += 1
            }
        }
        clock.advance(by: 30)
        for matchId in matchIds {
            try await first.ingest(F.football(matchId, home: 1, clock: "31'", events: [Self.goal]))
        }
        #expect(first.deliveries(.update).count == 5)

        clock.advance(by: 60)
        let second = ManagerHarness(store: store, clock: clock, seed: 2)
        try await second.lifecycle.restore()
        let resentEvents = second.deliveries.map { $0.payload.aps.contentState.event ?? "nil" }
        #expect(resentEvents.isEmpty, "every device with an update token was up to date")
        #expect(resentEvents.allSatisfy { $0 == Self.goal.text },
                "a catch-up must not turn the last event back into \"has started\"")
        for matchId in matchIds {
            #expect(await second.lifecycle.latest(matchId: matchId)?.content.event == Self.goal.text)
        }
    }
}
