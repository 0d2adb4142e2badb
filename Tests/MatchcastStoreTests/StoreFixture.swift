import Foundation
import MatchcastCore
import MatchcastStore
import Testing

/// Values for the store tests. Every date is a whole second: a lifecycle's JSON keeps whole seconds.
enum StoreFixture {
    static let epoch: TimeInterval = 1_776_780_000
    static let policy = ActivityPolicy()

    static func at(_ seconds: Int) -> Date { Date(timeIntervalSince1970: epoch + Double(seconds)) }

    /// Moves `record` with `update`, as a fan-out at `seconds` does; what its lifecycle did.
    @discardableResult
    static func move(_ record: inout ActivityRecord, _ update: MatchUpdate, at seconds: Int) -> [ActivityAction] {
        record.updatedAt = at(seconds)
        return record.lifecycle.matchChanged(update, now: at(seconds), policy: policy)
    }

    /// `record` after `update`, as a fan-out at `seconds` leaves it.
    static func moved(_ record: ActivityRecord, _ update: MatchUpdate, at seconds: Int) -> ActivityRecord {
        var record = record
        move(&record, update, at: seconds)
        return record
    }

    static func device(_ id: String, at seconds: Int = 0) -> DeviceRecord {
        DeviceRecord(id: id, secretHash: String(repeating: "ab", count: 32), createdAt: at(seconds))
    }

    static func token(_ id: String, _ token: String, _ environment: APNsEnvironment = .production, at seconds: Int = 0)
        -> PushToStartTokenRecord {
        PushToStartTokenRecord(deviceId: id, token: token, environment: environment, updatedAt: at(seconds))
    }

    static func follow(_ deviceId: String, _ matchId: String, at seconds: Int = 0) -> FollowRecord {
        FollowRecord(deviceId: deviceId, matchId: matchId, createdAt: at(seconds))
    }

    static let home = Team(id: "mun", name: "Manchester United", short: "MUN")
    static let away = Team(id: "liv", name: "Liverpool", short: "LIV")

    static func football(_ status: MatchStatus, _ home: Int, _ away: Int, clock: String, seq: Int = 1,
                         id: String = "epl-mun-liv") -> MatchSnapshot {
        MatchSnapshot(
            id: id, sport: .football, status: status, startsAt: at(-600), updatedAt: at(seq), seq: seq,
            competition: "Premier League", venue: "Old Trafford", home: Self.home, away: Self.away,
            score: .teamTotals(TeamScore(home: home, away: away, period: "1H", clock: clock)),
            events: home + away > 0 ? [MatchEvent(id: "e-\(seq)", type: "goal", at: at(seq), text: "Goal!")] : [])
    }

    static func tennis(_ id: String = "wimbledon-sf1") -> MatchSnapshot {
        MatchSnapshot(
            id: id, sport: .tennis, status: .live, updatedAt: at(30), seq: 88, competition: "Wimbledon",
            home: Team(id: "sin", name: "Jannik Sinner"), away: Team(id: "alc", name: "Carlos Alcaraz"),
            score: .tennis(TennisScore(rules: TennisRules(bestOf: 5, firstServer: .home, finalSetTiebreak: 10),
                                       points: "HHAHHAAHHHHAHAH")))
    }

    /// A lifecycle driven through real events: started when the match went live, token registered,
    /// a goal pushed at priority 10, then a routine change held back by coalescing.
    static func drivenLifecycle(activityId: String = "act_1", matchId: String = "epl-mun-liv", token: String = "tok-1")
        throws -> ActivityLifecycle {
        var tracker = MatchTracker()
        var lifecycle = ActivityLifecycle(activityId: activityId, matchId: matchId)
        let poll = Duration.seconds(5)
        let kickOffUpdate = try tracker.ingest(football(.live, 0, 0, clock: "1'", seq: 1, id: matchId), pollInterval: poll)
        let kickOff = try #require(kickOffUpdate)
        _ = lifecycle.matchChanged(kickOff, now: at(0), policy: policy)
        _ = lifecycle.updateTokenRegistered(token, now: at(2), policy: policy)
        let goalUpdate = try tracker.ingest(football(.live, 1, 0, clock: "12'", seq: 2, id: matchId), pollInterval: poll)
        let goal = try #require(goalUpdate)
        _ = lifecycle.matchChanged(goal, now: at(20), policy: policy)
        let minuteUpdate = try tracker.ingest(football(.live, 1, 0, clock: "13'", seq: 3, id: matchId), pollInterval: poll)
        let minute = try #require(minuteUpdate)
        _ = lifecycle.matchChanged(minute, now: at(23), policy: policy)
        return lifecycle
    }

    /// A waiting activity, or with `token` an adopted (active) one; `ended` ends it (the token stays on record).
    static func activity(
        _ id: String, device: String = "dev-a", match: String = "epl-mun-liv", token: String? = nil,
        ended: Bool = false, environment: APNsEnvironment = .production, at seconds: Int = 0
    ) -> ActivityRecord {
        var lifecycle = token.map { ActivityLifecycle.adopted(activityId: id, matchId: match, updateToken: $0, now: at(seconds)) }
            ?? ActivityLifecycle(activityId: id, matchId: match)
        if ended { _ = lifecycle.end(.dismissed, now: at(seconds)) }
        return ActivityRecord(deviceId: device, environment: environment, lifecycle: lifecycle, updatedAt: at(seconds))
    }
}

extension StoreFixture {
    /// An activity whose `start` went out to the push-to-start token, awaiting its update token.
    static func startingLifecycle(_ id: String, matchId: String = "epl-mun-liv") throws -> ActivityLifecycle {
        var tracker = MatchTracker()
        var lifecycle = ActivityLifecycle(activityId: id, matchId: matchId)
        let updateUpdate = try tracker.ingest(football(.live, 0, 0, clock: "1'", id: matchId), pollInterval: .seconds(5))
        let update = try #require(updateUpdate)
        _ = lifecycle.matchChanged(update, now: at(0), policy: policy)
        return lifecycle
    }
}
