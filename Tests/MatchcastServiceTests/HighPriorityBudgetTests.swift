import Foundation
import MatchcastCore
import MatchcastDelivery
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
        #expect(activity.highPriority?.lastHour == 2 && activity.highPriority?.matchLastHour == 2)
        #expect(activity.highPriority?.ceiling == 2)
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

    @Test("per activity: one started late counts only what went out since; a device following two matches is flagged; /metrics counts each priority-10 push")
    func perActivityAndPerDevice() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("matchcast-budget-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let clock = ManagerTestClock()
        let metrics = RecordingMetrics()
        let harness = ManagerHarness(
            store: try SQLiteStore(path: directory.appendingPathComponent("matchcast.sqlite").path), clock: clock,
            policy: ActivityPolicy(coalesceInterval: .seconds(10), highPriorityPerHour: 2), metrics: BrokerMetrics(factory: metrics))
        let other = "epl-liv-mci"
        // Kick-off (the match's first priority-10 push), then the first device's activity; a goal is the second.
        try await harness.ingest(F.football(Self.match, seq: 1))
        let (early, earlyActivity) = try await harness.activeDevice(matchId: Self.match, pushToStart: F.pushToStart(1), updateToken: F.update(1))
        clock.advance(by: 600)
        try await harness.ingest(F.football(Self.match, home: 1, clock: "10'", seq: 2))
        // A second device joins after both: its activity has had none of them.
        clock.advance(by: 100)
        let (late, lateActivity) = try await harness.activeDevice(matchId: Self.match, pushToStart: F.pushToStart(2), updateToken: F.update(2))
        clock.advance(by: 100)
        var mark = harness.deliveries.count
        try await harness.ingest(F.football(Self.match, home: 2, clock: "13'", seq: 3))
        let third = harness.deliveries(.update, since: mark)
        #expect(Set(third.map(\.activityId)) == [earlyActivity, lateActivity])
        #expect(third.map(\.apns.priority) == [5, 5], "one priority per update of the match: its ceiling is spent")

        var diagnostics = try await harness.service.diagnostics(deviceId: late)
        #expect(diagnostics.activities.first?.highPriority?.lastHour == 0, "nothing at 10 since it started")
        #expect(diagnostics.activities.first?.highPriority?.matchLastHour == 2)
        #expect(diagnostics.activities.first?.attention.map(\.code) == ["high-priority-ceiling"])
        #expect(diagnostics.highPriorityLastHour == 0 && diagnostics.attention.isEmpty)

        // The first device follows another match too, after its kick-off; a goal there goes at 10 to it.
        clock.advance(by: 100)
        try await harness.ingest(F.football(other, seq: 1))
        clock.advance(by: 10)
        let follow = try await harness.service.follow(deviceId: early, matchId: other)
        let otherActivity = try #require(follow.activityId)
        _ = try await harness.service.putActivity(
            activityId: otherActivity, deviceId: early, matchId: other, updateToken: F.update(3), environment: .production)
        clock.advance(by: 90)
        mark = harness.deliveries.count
        try await harness.ingest(F.football(other, home: 1, clock: "4'", seq: 2))
        #expect(harness.deliveries(.update, since: mark).map(\.apns.priority) == [10])

        diagnostics = try await harness.service.diagnostics(deviceId: early)
        let budgets = Dictionary(uniqueKeysWithValues: diagnostics.activities.map { ($0.activityId, $0.highPriority) })
        #expect(budgets[earlyActivity]??.lastHour == 2)
        #expect(budgets[otherActivity]??.lastHour == 1, "the other match's kick-off went out before it started")
        #expect(budgets[otherActivity]??.matchLastHour == 2)
        #expect(diagnostics.highPriorityLastHour == 3)
        #expect(diagnostics.attention.map(\.code) == ["device-high-priority-budget"], "3 in the hour on one device, ceiling 2")

        // Each push at 10, counted once per delivery: the two goals to an update token; three starts.
        #expect(metrics.counter("matchcast_high_priority_pushes_total", [("target", "updateToken")]) == 2)
        #expect(metrics.counter("matchcast_high_priority_pushes_total", [("target", "pushToStartToken")]) == 3)
        #expect(metrics.counter("matchcast_high_priority_pushes_total", [("target", "channel")]) == 0)
    }

    @Test("an update token older than its activity is flagged, from when it was first reported; each token's age is shown; fresh ones are not flagged")
    func updateTokenOlderThanTheActivity() async throws {
        let clock = ManagerTestClock()
        let harness = ManagerHarness(clock: clock)
        try await harness.ingest(F.football(Self.match, seq: 1))
        let (deviceId, first) = try await harness.activeDevice(matchId: Self.match, pushToStart: F.pushToStart(1), updateToken: F.update(1))
        // The first activity's token rotates: no activity holds the old one any more.
        clock.advance(by: 60)
        _ = try await harness.service.putActivity(
            activityId: first, deviceId: deviceId, matchId: Self.match, updateToken: F.update(2), environment: .production)
        // A new activity, reported with the token the app kept from before the rotation.
        clock.advance(by: 60)
        try await harness.ingest(F.football("epl-liv-mci", seq: 1))
        let stale = try #require(try await harness.service.follow(deviceId: deviceId, matchId: "epl-liv-mci").activityId)
        _ = try await harness.service.putActivity(
            activityId: stale, deviceId: deviceId, matchId: "epl-liv-mci", updateToken: F.update(1), environment: .production)
        // A third match whose activity gets a fresh token.
        try await harness.ingest(F.football("epl-che-tot", seq: 1))
        let third = try #require(try await harness.service.follow(deviceId: deviceId, matchId: "epl-che-tot").activityId)
        _ = try await harness.service.putActivity(
            activityId: third, deviceId: deviceId, matchId: "epl-che-tot", updateToken: F.update(3), environment: .production)
        clock.advance(by: 30)

        let diagnostics = try await harness.service.diagnostics(deviceId: deviceId)
        let codes = Dictionary(uniqueKeysWithValues: diagnostics.activities.map { ($0.activityId, $0.attention.map(\.code)) })
        #expect(codes[stale] == ["update-token-older-than-activity"], "no earlier activity holds it: only its first report shows it")
        #expect(codes[first] == [] && codes[third] == [])
        let message = try #require(diagnostics.activities.first { $0.activityId == stale }?.attention.first?.message)
        #expect(message.contains("first reported 2 min before it started"), "\(message)")
        #expect(!message.contains(F.update(1)), "the token is never shown whole")
        let ages = Dictionary(uniqueKeysWithValues: diagnostics.activities.map { ($0.activityId, $0.updateTokenAgeSeconds) })
        #expect(ages[stale] == 150, "its age counts from its first report, for the earlier activity")
        #expect(ages[first] == 90 && ages[third] == 30)
    }

    @Test("registered update tokens are noted in the store together: at the next tick, or before diagnostics are read")
    func sightingsAreNotedTogether() async throws {
        let clock = ManagerTestClock()
        let harness = ManagerHarness(clock: clock)
        try await harness.ingest(F.football(Self.match, seq: 1))
        let (deviceId, _) = try await harness.activeDevice(matchId: Self.match, pushToStart: F.pushToStart(1), updateToken: F.update(1))
        #expect(try await harness.store.updateTokenSightings(deviceId: deviceId).isEmpty, "not one write per registration")
        try await harness.tick()
        #expect(try await harness.store.updateTokenSightings(deviceId: deviceId).map(\.token) == [F.update(1)])
        #expect(try await harness.store.updateTokenSightings(deviceId: deviceId).first?.firstSeenAt == clock.now)
        // Another device's token, read through its diagnostics before any tick.
        let (other, _) = try await harness.activeDevice(matchId: Self.match, pushToStart: F.pushToStart(2), updateToken: F.update(2))
        clock.advance(by: 5)
        #expect(try await harness.service.diagnostics(deviceId: other).activities.first?.updateTokenAgeSeconds == 5)
    }

    @Test("the diagnostics show what the push service last said about each token, from the sink that keeps it")
    func lastAnswers() async throws {
        let clock = ManagerTestClock()
        let answering = AnsweringSink(refusing: F.update(1), at: clock.reader)
        let harness = ManagerHarness(clock: clock, besides: [answering])
        try await harness.ingest(F.football(Self.match, seq: 1))
        let (deviceId, _) = try await harness.activeDevice(matchId: Self.match, pushToStart: F.pushToStart(1), updateToken: F.update(1))
        clock.advance(by: 60)
        try await harness.ingest(F.football(Self.match, home: 1, clock: "5'", seq: 2))
        let diagnostics = try await harness.service.diagnostics(deviceId: deviceId)
        #expect(diagnostics.pushToStartToken?.lastAnswer == TokenAnswers.Answer(status: 200, reason: nil, at: ManagerTestClock.epoch))
        #expect(diagnostics.activities.first?.updateTokenLastAnswer
            == TokenAnswers.Answer(status: 410, reason: "Unregistered", at: ManagerTestClock.epoch.addingTimeInterval(60)))
    }

    @Test("diagnostics from a serve older than the budget and token fields still decode, without them")
    func diagnosticsOfAnOlderServe() throws {
        let older = Data("""
            {"deviceId":"dev_1","registeredAt":"2026-04-21T15:02:09Z",
             "pushToStartToken":{"token":"80a1…9f3c","environment":"sandbox","updatedAt":"2026-04-21T15:02:10Z","ageSeconds":3599},
             "follows":["epl-mun-liv"],
             "activities":[{"activityId":"act_1","matchId":"epl-mun-liv","phase":"active","updateToken":"5c0e…77a2",
               "highPriority":{"lastHour":3,"ceiling":24},"attention":[]}],
             "refusals":[],"attention":[]}
            """.utf8)
        let diagnostics = try JSON.decoder().decode(DeviceDiagnostics.self, from: older)
        #expect(diagnostics.highPriorityLastHour == nil && diagnostics.pushToStartToken?.lastAnswer == nil)
        let activity = try #require(diagnostics.activities.first)
        #expect(activity.highPriority?.lastHour == 3 && activity.highPriority?.matchLastHour == nil)
        #expect(activity.updateTokenAgeSeconds == nil && activity.updateTokenLastAnswer == nil)
    }

    @Test("what shows a token older than its activity: a first report or a refusal in a second before the activity started")
    func olderThanActivityEvidence() {
        let start = Date(timeIntervalSince1970: 1_800_000_600.7)
        let token = F.update(1)
        func refusal(at seconds: Double, kind: TokenRefusal.Kind = .update, token: String = F.update(1)) -> TokenRefusal {
            TokenRefusal(deviceId: "dev_1", kind: kind, token: token, reason: "Unregistered", at: Date(timeIntervalSince1970: seconds))
        }
        // Reported in the same second as the start (an adopted activity): not older.
        #expect(DeviceDiagnostics.olderThanActivity(
            token: token, startedAt: start, firstSeen: Date(timeIntervalSince1970: 1_800_000_600.2), refusals: []) == nil)
        #expect(DeviceDiagnostics.olderThanActivity(
            token: token, startedAt: start, firstSeen: Date(timeIntervalSince1970: 1_800_000_000), refusals: [])
            == "first reported 10 min before it started")
        // No sighting kept (an older build noted none): a refusal before the start shows it; another token's, a
        // push-to-start token's or a later one do not.
        #expect(DeviceDiagnostics.olderThanActivity(token: token, startedAt: start, firstSeen: nil, refusals: [
            refusal(at: 1_800_000_590, token: F.update(9)), refusal(at: 1_800_000_590, kind: .pushToStart),
            refusal(at: 1_800_000_700),
        ]) == nil)
        #expect(DeviceDiagnostics.olderThanActivity(token: token, startedAt: start, firstSeen: nil, refusals: [refusal(at: 1_800_000_590)])
            == "refused as dead (Unregistered) 10 s before it started")
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

/// A sink that answers every delivery as a push service would, 410 for one token and 200 for the rest, and keeps the
/// answers as the APNs sink does (`TokenAnswers`).
private struct AnsweringSink: DeliverySink {
    let name = "answering"
    let refusing: String
    let at: @Sendable () -> Date
    let answers = TokenAnswers()
    func lastAnswer(token: String) -> TokenAnswers.Answer? { answers.last(token: token) }

    func deliver(_ batch: [Delivery]) async throws {
        answers.record(batch.map { delivery in
            delivery.target.value == refusing ? (delivery.target.token, 410, "Unregistered") : (delivery.target.token, 200, nil)
        }, at: at())
    }
}
