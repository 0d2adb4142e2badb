import Foundation
import MatchcastCore
import MatchcastStore
import MatchcastTesting
import Testing
@testable import MatchcastService

private typealias F = ManagerFixtures

/// `replay`'s store keeps no content (`InMemoryStore(keepsActivityContent: false)`): a fan-out saves the activities
/// whose standing changed (started, given a token, ended), not those it only moved to the new score. What the devices
/// are sent does not depend on it.
@Suite("A store that keeps no activity content")
struct StoreWithoutContentTests {
    static let matchId = "epl-ars-che"
    static let devices = 5
    static let goal = MatchEvent(id: "g1", type: "goal", text: "GOAL! Saka 31'")
    static let kickOff = F.football(matchId, clock: "1'", seq: 1)
    static let firstGoal = F.football(matchId, home: 1, clock: "31'", seq: 2, events: [goal])
    static let fullTime = F.football(matchId, .completed, home: 1, clock: "FT", seq: 3, events: [goal])

    /// Each device's activity, started by push-to-start at kick-off and given its update token by the app.
    static func started(_ h: ManagerHarness) async throws -> [String] {
        try await h.ingest(kickOff)
        var activityIds: [String] = []
        for n in 0..<devices {
            activityIds.append(try await h.activeDevice(matchId: matchId, pushToStart: F.pushToStart(n), updateToken: F.update(n)).activityId)
        }
        return activityIds
    }

    @Test("the same deliveries as on a store that keeps everything; the store's records keep standing, not content")
    func sameDeliveriesOnlyStandingSaved() async throws {
        let kept = ManagerHarness(store: InMemoryStore(keepsOutbox: false), seed: 5)
        let lean = ManagerHarness(store: InMemoryStore(keepsOutbox: false, keepsActivityContent: false), seed: 5)
        #expect(kept.store.keepsActivityContent && !lean.store.keepsActivityContent)
        let activityIds = try await Self.started(kept)
        #expect(try await Self.started(lean) == activityIds)

        for h in [kept, lean] { try await h.ingest(Self.firstGoal) }
        let goals = kept.deliveries(.update)
        #expect(goals.count == Self.devices && goals.allSatisfy { $0.payload.aps.contentState.home.score == "1" })
        // The goal was sent, and the lean store still has each activity as its token left it: active, the same token,
        // showing the kick-off. The store that keeps everything has the goal.
        for activityId in activityIds {
            let leanRecord = try #require(try await lean.store.activity(id: activityId))
            let keptRecord = try #require(try await kept.store.activity(id: activityId))
            #expect(leanRecord.phase == .active && leanRecord.updateToken == keptRecord.updateToken)
            #expect(leanRecord.lifecycle.standing == keptRecord.lifecycle.standing)
            #expect(keptRecord.lifecycle.sentContent?.home.score == "1")
            #expect(leanRecord.lifecycle.sentContent?.home.score == "0", "an update that only moved the activity is not saved")
        }
        // Still found by its token: a dead token still ends its activity.
        #expect(try await lean.store.activity(updateToken: F.update(0))?.isOpen == true)

        for h in [kept, lean] { try await h.ingest(Self.fullTime) }
        #expect(kept.deliveries(.end).count == Self.devices)
        // An end changes standing: saved on both.
        #expect(try await lean.store.activities(matchId: Self.matchId).allSatisfy { $0.phase == .ended })
        #expect(try await lean.store.openActivities().isEmpty)

        // What the devices were sent is the same, ids, targets and payloads, in the same order.
        #expect(lean.deliveries.count == 3 * Self.devices)
        #expect(lean.deliveries == kept.deliveries)
    }
}
