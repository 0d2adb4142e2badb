import Foundation
import MatchcastCore
@testable import MatchcastService
import MatchcastStore
import MatchcastTesting
import Testing

private typealias F = ManagerFixtures

/// The budget ledger through the lifecycle manager on a SQLite file: a match's key events go at priority 10 up to the
/// hourly ceiling and at 5 past it, the final at 10; the ledger is saved with the match, so a restarted broker keeps
/// counting; diagnostics and metrics show it.
@Suite("Budget ledger: priority-10 key events per match and hour")
struct HighPriorityBudgetTests {
    static let match = "epl-ars-che"

    @Test("at 10 up to the ceiling, at 5 past it, the final at 10; kept across a restart; shown in diagnostics and metrics")
    func ceilingAcrossARestart() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("matchcast-budget-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("matchcast.sqlite").path
        let clock = ManagerTestClock()
        let kickOff = clock.now
        let policy = ActivityPolicy(coalesceInterval: .seconds(10), highPriorityPerHour: 2)
        let metrics = RecordingMetrics()
        let harness = ManagerHarness(store: try SQLiteStore(path: path), clock: clock, policy: policy, metrics: BrokerMetrics(factory: metrics))

        // Kick-off is a key event for the match (its "has started"): the first of the hour's two.
        try await harness.ingest(F.football(Self.match, seq: 1))
        let (deviceId, activityId) = try await harness.activeDevice(matchId: Self.match, pushToStart: F.pushToStart(1), updateToken: F.update(1))
        func priorities(since mark: Int, of h: ManagerHarness) -> [Int] {
            h.deliveries(.update, since: mark).filter { $0.activityId == activityId }.map(\.apns.priority)
        }
        clock.advance(by: 600)
        var mark = harness.deliveries.count
        try await harness.ingest(F.football(Self.match, home: 1, clock: "10'", seq: 2))
        #expect(priorities(since: mark, of: harness) == [10], "the second of two")
        clock.advance(by: 600)
        mark = harness.deliveries.count
        try await harness.ingest(F.football(Self.match, home: 2, clock: "20'", seq: 3))
        #expect(priorities(since: mark, of: harness) == [5], "past the ceiling: at 5")
        #expect(harness.deliveries(since: mark).first?.payload.aps.alert?.body == "Goal! Arsenal", "with its alert")
        #expect(metrics.counter("matchcast_key_event_updates_total", [("priority", "10")]) == 2)
        #expect(metrics.counter("matchcast_key_event_updates_total", [("priority", "5")]) == 1)

        let diagnostics = try await harness.service.diagnostics(deviceId: deviceId)
        let activity = try #require(diagnostics.activities.first)
        #expect(activity.highPriority?.lastHour == 2 && activity.highPriority?.ceiling == 2)
        #expect(activity.highPriority?.roomAt == kickOff.addingTimeInterval(3600), "room again an hour after kick-off")
        #expect(activity.attention.map(\.code) == ["high-priority-ceiling"])

        // A restart on the same file: the ledger comes back with the match, so the next goal still goes at 5.
        let restarted = ManagerHarness(store: try SQLiteStore(path: path), clock: clock, policy: policy)
        try await restarted.lifecycle.restore()
        clock.advance(by: 600)
        mark = restarted.deliveries.count
        try await restarted.ingest(F.football(Self.match, home: 3, clock: "30'", seq: 4))
        #expect(priorities(since: mark, of: restarted) == [5], "the pushes before the restart still count")
        // An hour after kick-off, kick-off's push has left the hour: the next goal goes at 10.
        clock.advance(by: kickOff.addingTimeInterval(3601).timeIntervalSince(clock.now))
        mark = restarted.deliveries.count
        try await restarted.ingest(F.football(Self.match, home: 4, clock: "60'", seq: 5))
        #expect(priorities(since: mark, of: restarted) == [10])
        // The final goes at 10 although the hour is full again.
        clock.advance(by: 60)
        mark = restarted.deliveries.count
        try await restarted.ingest(F.football(Self.match, .completed, home: 4, clock: "FT", seq: 6))
        let ends = restarted.deliveries(.end, since: mark).filter { $0.activityId == activityId }
        #expect(ends.map(\.apns.priority) == [10])
        let after = try await restarted.service.diagnostics(deviceId: deviceId)
        #expect(after.activities.first?.highPriority == nil, "an ended activity spends nothing more")
    }

    @Test("an open activity whose update token an earlier activity of the device had is flagged")
    func updateTokenFromAnEarlierActivity() async throws {
        let clock = ManagerTestClock()
        let harness = ManagerHarness(clock: clock)
        try await harness.ingest(F.football(Self.match, seq: 1))
        let (deviceId, first) = try await harness.activeDevice(matchId: Self.match, pushToStart: F.pushToStart(1), updateToken: F.update(1))
        // The activity ends (unfollowed); the next one, of another match, gets the same token from a confused app.
        _ = try await harness.service.unfollow(deviceId: deviceId, matchId: Self.match)
        try await harness.ingest(F.football("epl-liv-mci", seq: 1))
        clock.advance(by: 60)
        let follow = try await harness.service.follow(deviceId: deviceId, matchId: "epl-liv-mci")
        let second = try #require(follow.activityId)
        _ = try await harness.service.putActivity(
            activityId: second, deviceId: deviceId, matchId: "epl-liv-mci", updateToken: F.update(1), environment: .production)
        let diagnostics = try await harness.service.diagnostics(deviceId: deviceId)
        let flagged = diagnostics.activities.filter { $0.attention.contains { $0.code == "update-token-from-earlier-activity" } }
        #expect(flagged.map(\.activityId) == [second])
        #expect(flagged.first?.attention.first { $0.code == "update-token-from-earlier-activity" }?.message.contains(first) == true)
    }
}
