import Foundation
import MatchcastCore
import MatchcastService
import MatchcastStore
import MatchcastTesting
import Testing

private typealias F = ManagerFixtures

/// Each match has a gate of its own in the lifecycle manager: a match whose store write is slow holds back only its
/// own operations, which still run one at a time and in order; another match's updates, follows and starts go on.
@Suite("lifecycle manager: matches run apart")
struct MatchesApartTests {
    static let goal = MatchEvent(id: "g1", type: "goal", text: "GOAL! Saka 31'")

    @Test("a fan-out held in its store write holds back neither another match's update nor its follows; its own wait",
          .timeLimit(.minutes(1)))
    func aHeldMatchHoldsBackOnlyItself() async throws {
        let store = ManagerScriptedStore()
        let h = ManagerHarness(store: store)
        try await h.ingest(F.football("a"))
        try await h.ingest(F.football("b"))
        _ = try await h.activeDevice(matchId: "a", pushToStart: F.pushToStart(1), updateToken: F.update(1))
        _ = try await h.activeDevice(matchId: "b", pushToStart: F.pushToStart(2), updateToken: F.update(2))
        let mark = h.deliveries.count

        store.enqueueGateMatch.withLock { $0 = "a" }
        store.enqueueGate.arm()
        let goalA = Task { try await h.ingest(F.football("a", home: 1, clock: "31'", events: [Self.goal])) }
        await store.enqueueGate.waitUntilHit()

        // Match a is held in the save of its goal's fan-out. Match b goes on: its goal, a new follower's start.
        try await h.ingest(F.football("b", home: 1, clock: "31'", events: [Self.goal]))
        let followerB = try await h.device(pushToStart: F.pushToStart(3))
        let followB = try await h.service.follow(deviceId: followerB, matchId: "b")
        #expect(followB.activityState == "starting")
        // A follow of a waits behind a's fan-out.
        let followerA = try await h.device(pushToStart: F.pushToStart(4))
        let followA = Task { try await h.service.follow(deviceId: followerA, matchId: "a") }
        let queued = try await eventually { await h.lifecycle.queuedFollowCount == 1 }
        #expect(queued, "the follow of a waits for a's gate")
        let whileHeld = h.deliveries(since: mark)
        #expect(whileHeld.map(\.matchId) == ["b", "b"], "b's goal and b's start went out; nothing of a's yet")
        #expect(whileHeld.map(\.payload.aps.event) == [.update, .start])

        store.enqueueGate.release()
        try await goalA.value
        let followedA = try await followA.value
        #expect(followedA.activityState == "starting")
        let ofA = h.deliveries(since: mark).filter { $0.matchId == "a" }
        #expect(ofA.map(\.payload.aps.event) == [.update, .start], "a's goal, then a's new follower's start: in order")
        #expect(ofA.last?.payload.aps.contentState.home.score == "1", "the new follower starts on the score after the goal")
    }

    @Test("one device's starts in two matches at once keep the push-to-start spacing", .timeLimit(.minutes(1)))
    func startSpacingAcrossMatches() async throws {
        let store = ManagerScriptedStore()
        let h = ManagerHarness(store: store)
        // One device follows two matches before it has a push-to-start token: both wait.
        let device = try await h.device()
        _ = try await h.service.follow(deviceId: device, matchId: "a")
        _ = try await h.service.follow(deviceId: device, matchId: "b")
        try await h.ingest(F.football("a"))
        try await h.ingest(F.football("b"))
        #expect(h.deliveries(.start).isEmpty)
        // The token arrives in the store without telling the manager (as from another replica's API).
        try await store.setPushToStartToken(PushToStartTokenRecord(
            deviceId: device, token: F.pushToStart(9), environment: .production, updatedAt: h.clock.now))

        // A tick looks at a's waiting activity and is held reading the device's token; meanwhile b's goal starts the
        // device's activity in b.
        store.pushToStartGate.arm()
        let tick = Task { try await h.tick() }
        await store.pushToStartGate.waitUntilHit()
        try await h.ingest(F.football("b", home: 1, clock: "31'", events: [Self.goal]))
        #expect(h.deliveries(.start).map(\.matchId) == ["b"])
        store.pushToStartGate.release()
        _ = try await tick.value
        #expect(h.deliveries(.start).map(\.matchId) == ["b"], "a's start waits for the spacing b's start began")

        h.clock.advance(by: 5)
        try await h.tick()
        #expect(h.deliveries(.start).map(\.matchId) == ["b", "a"], "a starts once the spacing has passed")
    }

    @Test("a tick looks at every other match while one is busy, and at the busy one after it", .timeLimit(.minutes(1)))
    func aTickIsNotHeldByABusyMatch() async throws {
        let store = ManagerScriptedStore()
        let h = ManagerHarness(store: store)  // routine changes coalesced for 10 s
        try await h.ingest(F.football("a"))
        try await h.ingest(F.football("b"))
        _ = try await h.activeDevice(matchId: "a", pushToStart: F.pushToStart(1), updateToken: F.update(1))
        let (leaver, _) = try await h.activeDevice(matchId: "a", pushToStart: F.pushToStart(3), updateToken: F.update(3))
        _ = try await h.activeDevice(matchId: "b", pushToStart: F.pushToStart(2), updateToken: F.update(2))
        h.clock.advance(by: 30)
        for matchId in ["a", "b"] {
            try await h.ingest(F.football(matchId, home: 1, clock: "31'", events: [Self.goal]))  // goes at once
        }
        h.clock.advance(by: 3)
        for matchId in ["a", "b"] {
            try await h.ingest(F.football(matchId, home: 1, clock: "34'", events: [Self.goal]))  // held: a tick sends it
        }
        h.clock.advance(by: 10)
        let mark = h.deliveries.count

        // a (looked at first: a tick goes through the matches in order) is busy: an unfollow held in its save.
        store.enqueueGateMatch.withLock { $0 = "a" }
        store.enqueueGate.arm()
        let unfollow = Task { try await h.service.unfollow(deviceId: leaver, matchId: "a") }
        await store.enqueueGate.waitUntilHit()
        let tick = Task { try await h.tick() }
        let flushed = try await eventually(within: 20) { h.deliveries(since: mark).contains { $0.matchId == "b" } }
        #expect(flushed, "b's held change went out while a was busy")
        #expect(h.deliveries(since: mark).map(\.payload.aps.contentState.clock) == ["34'"])

        store.enqueueGate.release()
        try await unfollow.value
        _ = try await tick.value
        let ofA = h.deliveries(since: mark).filter { $0.matchId == "a" }
        #expect(ofA.map(\.payload.aps.event) == [.end, .update], "the leaver's end, then the tick's flush of a")
        #expect(ofA.last?.payload.aps.contentState.clock == "34'")
        #expect(ofA.last?.target == PushTarget(kind: .updateToken, value: F.update(1)))
    }
}
