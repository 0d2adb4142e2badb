import Foundation
import MatchcastCore
@testable import MatchcastStore
import Testing

private typealias F = StoreFixture

/// What a store of the previous release (SQLite up to v3, PostgreSQL up to v4) held: activities with their lifecycle
/// as one JSON document and queued deliveries as whole JSON objects. The upgrade tests write these rows exactly as
/// that release did, migrate, and read them back.
enum PreviousRelease {
    static let match = "epl-mun-liv"
    static let otherMatch = "epl-ars-che"

    /// Contents with text that needs escaping (quotes, a slash, non-ASCII), so a migration that re-encodes is seen.
    static let kickOff = ContentState(
        status: "live", statusText: "Live \"1H\" 1'", home: .init(name: "Müller", score: "0"),
        away: .init(name: "LIV", score: "0"), summary: "MUN 0–0 LIV · 1'")
    static let goal = ContentState(
        status: "live", statusText: "Live \"1H\" 12'", home: .init(name: "Müller", score: "1"),
        away: .init(name: "LIV", score: "0"), summary: "MUN 1–0 LIV · 12' / penalty")
    static let minute = ContentState(
        status: "live", statusText: "Live \"1H\" 13'", home: .init(name: "Müller", score: "1"),
        away: .init(name: "LIV", score: "0"), summary: "MUN 1–0 LIV · 13'")
    static let fullTime = ContentState(
        status: "final", statusText: "FT", home: .init(name: "Müller", score: "2"),
        away: .init(name: "LIV", score: "1"), summary: "MUN 2–1 LIV · FT")

    static func stamp(_ seconds: Int) -> Int { Int(F.epoch) + seconds }

    static func lifecycle(_ id: String, match: String = match, _ stored: ActivityLifecycle.Stored) -> ActivityLifecycle {
        ActivityLifecycle(activityId: id, matchId: match, stored: stored)
    }

    /// One activity in every phase and state a lifecycle can be saved in.
    static func activities() -> [ActivityRecord] {
        let kickOffBox = ContentBox(kickOff), goalBox = ContentBox(goal), minuteBox = ContentBox(minute)
        let fullTimeBox = ContentBox(fullTime)
        func record(_ lifecycle: ActivityLifecycle, device: String = "dev-a", env: APNsEnvironment = .production, at: Int)
            -> ActivityRecord {
            ActivityRecord(deviceId: device, environment: env, lifecycle: lifecycle, updatedAt: F.at(at))
        }
        return [
            // Waiting for the match to go live.
            record(lifecycle("act-waiting", .init(
                phase: .waiting, updateToken: nil, lastTimestamp: 0, sent: nil, sentAt: nil, sentStaleDate: nil,
                startedAt: nil, held: nil, heldStaleness: nil, endHeld: false, final: nil, channelId: nil)), at: 1),
            // Started, no update token yet: the goal is held, with a staleness that is not whole seconds.
            record(lifecycle("act-starting", .init(
                phase: .starting, updateToken: nil, lastTimestamp: stamp(0), sent: kickOffBox, sentAt: stamp(0),
                sentStaleDate: stamp(0) + 900, startedAt: stamp(0), held: goalBox, heldStaleness: 30_250_000_000,
                endHeld: false, final: nil, channelId: nil)), device: "dev-b", env: .sandbox, at: 20),
            // Active: the goal sent, a routine change held by coalescing.
            record(lifecycle("act-active", .init(
                phase: .active, updateToken: "upd-active", lastTimestamp: stamp(20), sent: goalBox, sentAt: stamp(20),
                sentStaleDate: stamp(20) + 900, startedAt: stamp(0), held: minuteBox, heldStaleness: 900_000_000_000,
                endHeld: false, final: nil, channelId: nil)), at: 23),
            // The match ended before the token came: the end is held with the final content.
            record(lifecycle("act-end-held", .init(
                phase: .starting, updateToken: nil, lastTimestamp: stamp(0), sent: kickOffBox, sentAt: stamp(0),
                sentStaleDate: stamp(0) + 900, startedAt: stamp(0), held: minuteBox, heldStaleness: 5_000_000_000,
                endHeld: true, final: fullTimeBox, channelId: nil)), device: "dev-b", at: 5400),
            // Ended, its token on record (the same token as an open activity: only open ones must differ).
            record(lifecycle("act-ended", .init(
                phase: .ended, updateToken: "upd-active", lastTimestamp: stamp(5400), sent: fullTimeBox,
                sentAt: stamp(5400), sentStaleDate: stamp(20) + 900, startedAt: stamp(0), held: nil, heldStaleness: nil,
                endHeld: false, final: nil, channelId: nil)), at: 5400),
            // Started on a broadcast channel.
            record(lifecycle("act-channel", .init(
                phase: .active, updateToken: "upd-channel", lastTimestamp: stamp(1), sent: kickOffBox, sentAt: stamp(1),
                sentStaleDate: stamp(1) + 900, startedAt: stamp(1), held: nil, heldStaleness: nil, endHeld: false,
                final: nil, channelId: "Y2hhbm5lbC0xMjM0NTY3ODkw==")), device: "dev-b", at: 2),
            // Another match showing the same content text: content rows are per match.
            record(lifecycle("act-other-match", match: otherMatch, .init(
                phase: .active, updateToken: "upd-other", lastTimestamp: stamp(20), sent: ContentBox(goal),
                sentAt: stamp(20), sentStaleDate: stamp(20) + 600, startedAt: stamp(3), held: nil, heldStaleness: nil,
                endHeld: false, final: nil, channelId: nil)), at: 21),
        ]
    }

    static let devices = [F.device("dev-a"), F.device("dev-b")]

    /// Deliveries queued before the upgrade, in queue order: every event and target kind.
    static func deliveries() -> [Delivery] {
        var start = Outbox.delivery("dlv-old-start", activity: "act-starting", .start)
        start.target = PushTarget(kind: .pushToStartToken, value: "pts-" + String(repeating: "ef", count: 30))
        var otherMatch = Outbox.delivery("dlv-old-other", activity: "act-other-match", .update, timestamp: 1_776_784_400)
        otherMatch.matchId = Self.otherMatch
        return [
            start,
            Outbox.delivery("dlv-old-update", activity: "act-active", .update),
            otherMatch,
            Outbox.delivery("dlv-old-end", activity: "act-ended", .end, timestamp: 1_776_785_400),
            Outbox.delivery("dlv-old-channel-end", activity: "act-channel", .end, timestamp: 1_776_784_330),
        ]
    }

    /// The activities a fan-out after the upgrade leaves: every open one moved on to the full-time content, the
    /// deliveries of the update sharing one payload.
    static func fanOut(_ records: [ActivityRecord]) -> (records: [ActivityRecord], deliveries: [Delivery]) {
        let box = ContentBox(fullTime)
        var template = Outbox.delivery("", activity: "", .end, timestamp: stamp(6000))
        template.target = PushTarget(kind: .updateToken, value: "")
        var moved: [ActivityRecord] = []
        var deliveries: [Delivery] = []
        for record in records where record.isOpen && record.matchId == match {
            var stored = record.lifecycle.stored
            stored.phase = .ended
            stored.lastTimestamp = stamp(6000)
            stored.sent = box
            stored.sentAt = stamp(6000)
            stored.held = nil
            stored.heldStaleness = nil
            stored.endHeld = false
            var next = record
            next.lifecycle = ActivityLifecycle(activityId: record.activityId, matchId: record.matchId, stored: stored)
            next.updatedAt = F.at(6000)
            moved.append(next)
            deliveries.append(Delivery(
                id: "dlv-new-\(record.activityId)", activityId: record.activityId,
                target: PushTarget(kind: .updateToken, value: record.updateToken ?? "none"), sharingWith: template))
        }
        return (moved, deliveries)
    }
}
