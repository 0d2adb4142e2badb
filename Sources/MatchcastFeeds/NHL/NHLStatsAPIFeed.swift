import Foundation
import MatchcastCore

/// Converts the legacy NHL Stats API live feed (`GET /api/v1/game/{gamePk}/feed/live` on
/// `statsapi.web.nhl.com`, retired in 2023 in favour of api-web) into a `MatchSnapshot`, for
/// recordings made while it served. Its game ids are api-web's, so snapshots read `nhl:<gamePk>` too.
///
/// - `status` from `gameData.status`: `codedGameState` 9 or a Postponed `detailedState` is
///   `postponed`, Cancelled `abandoned`; else `abstractGameState` Preview is `scheduled`, Final
///   `completed`, Live `live` (`break` while `liveData.linescore.intermissionInfo.inIntermission`).
/// - `score` from `liveData.linescore`: `teams.*.goals`, `currentPeriod` as `P1`...`P3`/`OT`/`2OT`/`SO`,
///   `currentPeriodTimeRemaining` as the clock while it is a `mm:ss` time and the game is live.
/// - `events`: the latest 20 of `liveData.plays.scoringPlays` (indexes into `allPlays`), `goal-<eventId>`.
/// - `seq` = the number of plays so far; `metaData.wait` is returned as the poll interval.
public enum NHLStatsAPIFeed {
    /// The snapshot and `metaData.wait`, the poll interval in seconds the API asks for.
    public static func snapshot(from data: Data) throws(InputError) -> (snapshot: MatchSnapshot, waitSeconds: Int?) {
        let body = try JSON.decode(NHLStatsAPIFeedBody.self, from: data)
        guard let gamePk = body.gamePk ?? body.gameData.game?.pk else { throw InputError(field: "gamePk", reason: "missing") }
        guard gamePk > 0 else { throw InputError(field: "gamePk", reason: "must be a positive number, got \(gamePk)") }
        let game = body.gameData
        let linescore = body.liveData?.linescore
        let status = try status(game.status, intermission: linescore?.intermissionInfo?.inIntermission ?? false)
        let home = try team(game.teams.home, field: "gameData.teams.home")
        let away = try team(game.teams.away, field: "gameData.teams.away")
        let snapshot = MatchSnapshot(
            id: "nhl:\(gamePk)", sport: .hockey, status: status,
            startsAt: game.datetime?.dateTime.map(NHLWebFeed.wholeSeconds),
            seq: body.liveData?.plays?.allPlays?.count ?? 0,
            competition: "NHL", venue: NHLWebFeed.nonEmpty(game.venue?.name), home: home, away: away,
            score: .teamTotals(try score(linescore, status: status)),
            events: try events(body.liveData?.plays, home: home, away: away))
        return (snapshot, body.metaData?.wait)
    }

    private static func status(_ status: NHLStatsAPIFeedBody.GameData.Status, intermission: Bool) throws(InputError) -> MatchStatus {
        let detailed = status.detailedState ?? ""
        if status.codedGameState == "9" || detailed.hasPrefix("Postponed") { return .postponed }
        if detailed.hasPrefix("Cancelled") || detailed.hasPrefix("Canceled") { return .abandoned }
        switch status.abstractGameState {
        case "Preview": return .scheduled
        case "Live": return intermission ? .break : .live
        case "Final": return .completed
        default:
            throw InputError(
                field: "gameData.status.abstractGameState", reason: "unknown value '\(status.abstractGameState.prefix(40))'")
        }
    }

    private static func team(_ info: NHLStatsAPIFeedBody.GameData.TeamInfo, field: String) throws(InputError) -> Team {
        guard info.id > 0 else { throw InputError(field: field + ".id", reason: "must be a positive number, got \(info.id)") }
        let short = NHLWebFeed.nonEmpty(info.abbreviation) ?? NHLWebFeed.nonEmpty(info.triCode)
        guard let name = NHLWebFeed.nonEmpty(info.name) ?? short else { throw InputError(field: field + ".name", reason: "missing") }
        return Team(id: String(info.id), name: name, short: short)
    }

    private static func score(_ linescore: NHLStatsAPILinescore?, status: MatchStatus) throws(InputError) -> TeamScore {
        let number = linescore?.currentPeriod ?? 0
        guard NHLPeriod.numbers.contains(number) else {
            throw InputError(field: "liveData.linescore.currentPeriod", reason: "must be in 0...20, got \(number)")
        }
        var home = linescore?.teams?.home?.goals ?? 0
        var away = linescore?.teams?.away?.goals ?? 0
        guard (0...1_000).contains(home) else { throw InputError(field: "liveData.linescore.teams.home.goals", reason: "must be in 0...1000, got \(home)") }
        guard (0...1_000).contains(away) else { throw InputError(field: "liveData.linescore.teams.away.goals", reason: "must be in 0...1000, got \(away)") }
        if status == .scheduled || status == .postponed { (home, away) = (0, 0) }
        let shootout = linescore?.currentPeriodOrdinal == "SO" || ((linescore?.hasShootout ?? false) && number > 3)
        let period = status == .scheduled || status == .postponed
            ? nil : NHLPeriod.label(number: number, type: shootout ? "SO" : nil)
        let remaining = linescore?.currentPeriodTimeRemaining
        let clock = status == .live && period != "SO" && remaining.flatMap(NHLPeriod.seconds) != nil ? remaining : nil
        return TeamScore(home: home, away: away, period: period, clock: clock)
    }

    private static func events(_ plays: NHLStatsAPIFeedBody.Plays?, home: Team, away: Team) throws(InputError) -> [MatchEvent] {
        let all = plays?.allPlays ?? []
        var events: [MatchEvent] = []
        for (position, index) in (plays?.scoringPlays ?? []).enumerated().suffix(NHLWebFeed.eventLimit) {
            guard all.indices.contains(index) else {
                throw InputError(
                    field: "liveData.plays.scoringPlays[\(position)]", reason: "index \(index) is not in allPlays (\(all.count) plays)")
            }
            let play = all[index]
            guard let eventId = play.about?.eventId ?? play.about?.eventIdx else {
                throw InputError(field: "liveData.plays.allPlays[\(index)].about.eventId", reason: "missing")
            }
            let number = play.about?.period ?? 0
            let period = NHLPeriod.numbers.contains(number) ? NHLPeriod.label(number: number, type: play.about?.periodType) : nil
            let team = play.team?.id.flatMap { $0 == Int(home.id) ? home.short : $0 == Int(away.id) ? away.short : nil }
                ?? NHLWebFeed.nonEmpty(play.team?.triCode)
            var text = (team.map { $0 + " goal" } ?? "Goal")
            if let description = NHLWebFeed.nonEmpty(play.result?.description) { text += ": " + description }
            if let h = play.about?.goals?.home, let a = play.about?.goals?.away {
                text += " · \(home.short) \(h)-\(a) \(away.short)"
            }
            let time = period == "SO" ? nil : play.about?.periodTime.flatMap { NHLPeriod.seconds($0) != nil ? $0 : nil }
            let when = [period, time].compactMap { $0 }.joined(separator: " ")
            if !when.isEmpty { text += " · " + when }
            events.append(
                MatchEvent(id: "goal-\(eventId)", type: "goal", at: play.about?.dateTime.map(NHLWebFeed.wholeSeconds), text: text))
        }
        return events
    }
}
