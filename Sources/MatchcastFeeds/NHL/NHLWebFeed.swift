import Foundation
import MatchcastCore

/// Converts NHL api-web documents into `MatchSnapshot`s: the play-by-play
/// (`GET /v1/gamecenter/{id}/play-by-play`) into one, the score list (`GET /v1/score/{date}`) into one a game.
///
/// - `id` is `nhl:<game id>`; `home`/`away` from `homeTeam`/`awayTeam` (`name` = place + common name,
///   or the score list's `name`; `short` = `abbrev`).
/// - `status`: `gameScheduleState` `CNCL` is `abandoned`, `PPD`/`SUSP` `postponed` (unless the game is
///   over); else `gameState` `FUT`/`PRE` is `scheduled`, `LIVE`/`CRIT` `live` (`break` while
///   `clock.inIntermission`), `FINAL`/`OFF` `completed`, `PPD` `postponed`.
/// - `score`: the teams' `score`, `period` from `periodDescriptor` (`P1`...`P3`, `OT`, `2OT`..., `SO`),
///   `clock` from `clock.timeRemaining` while the period is being played (nil in an intermission, a
///   shootout and once the game is over, so a final reads "P3"/"OT"/"SO" with no clock).
/// - `events` (play-by-play only): the latest 20 goals, `goal-<eventId>`, type `goal` (`shootout-goal`
///   in a shootout), text with the team, the scorer from `rosterSpots`, the score after it and the time.
/// - `seq`: `NHLPeriod.progress`, the same for both documents at one moment of the game.
public enum NHLWebFeed {
    /// Goals kept as events, newest last.
    static let eventLimit = 20

    /// The snapshot of one play-by-play document.
    public static func snapshot(fromPlayByPlay data: Data) throws(InputError) -> MatchSnapshot {
        let body = try JSON.decode(NHLPlayByPlayBody.self, from: data)
        var snapshot = try snapshot(body.game, field: "")
        snapshot.events = try events(body, home: snapshot.home, away: snapshot.away)
        return snapshot
    }

    /// One snapshot for each game of a score list, in its order, and the list's own date.
    public static func snapshots(fromScore data: Data) throws(InputError) -> (date: String?, matches: [MatchSnapshot]) {
        let list = try scoreList(data)
        return (list.date, list.games.map(\.snapshot))
    }

    /// Each game of a score list with its raw `gameState`, which tells a just-final game (`FINAL`) from an old one (`OFF`).
    static func scoreList(_ data: Data) throws(InputError) -> (date: String?, games: [(gameState: String, snapshot: MatchSnapshot)]) {
        let body = try JSON.decode(NHLScoreBody.self, from: data)
        var games: [(gameState: String, snapshot: MatchSnapshot)] = []
        for (index, game) in body.games.enumerated() {
            games.append((game.gameState, try snapshot(game, field: "games[\(index)]")))
        }
        return (body.currentDate, games)
    }

    /// The snapshot a game header describes; `field` prefixes the paths errors name.
    static func snapshot(_ game: NHLWebGame, field: String) throws(InputError) -> MatchSnapshot {
        func path(_ name: String) -> String { field.isEmpty ? name : field + "." + name }
        guard game.id > 0 else { throw InputError(field: path("id"), reason: "must be a positive number, got \(game.id)") }
        let intermission = game.clock?.inIntermission ?? false
        let status = try status(gameState: game.gameState, scheduleState: game.gameScheduleState, intermission: intermission, field: path("gameState"))

        let number = game.periodDescriptor?.number ?? game.period ?? 0
        guard NHLPeriod.numbers.contains(number) else {
            throw InputError(
                field: path(game.periodDescriptor?.number != nil ? "periodDescriptor.number" : "period"),
                reason: "must be in \(NHLPeriod.numbers.lowerBound)...\(NHLPeriod.numbers.upperBound), got \(number)")
        }
        let periodType = game.periodDescriptor?.periodType
        let period = status == .scheduled || status == .postponed
            ? nil
            : NHLPeriod.label(number: number, type: periodType, regulationPeriods: game.periodDescriptor?.maxRegulationPeriods ?? 3)

        var remaining = game.clock?.secondsRemaining
        if let seconds = remaining, !(0...3_600).contains(seconds) {
            throw InputError(field: path("clock.secondsRemaining"), reason: "must be in 0...3600, got \(seconds)")
        }
        if remaining == nil, let text = game.clock?.timeRemaining { remaining = NHLPeriod.seconds(text) }
        var clock: String?
        if status == .live, period != "SO", let remaining {
            clock = game.clock?.timeRemaining.flatMap { NHLPeriod.seconds($0) != nil ? $0 : nil } ?? NHLPeriod.clockText(seconds: remaining)
        }

        let home = try team(game.homeTeam, field: path("homeTeam"))
        let away = try team(game.awayTeam, field: path("awayTeam"))
        let score = TeamScore(
            home: try goals(game.homeTeam.score, field: path("homeTeam.score")),
            away: try goals(game.awayTeam.score, field: path("awayTeam.score")),
            period: period, clock: clock)
        return MatchSnapshot(
            id: "nhl:\(game.id)", sport: .hockey, status: status, startsAt: game.startTimeUTC.map(wholeSeconds),
            seq: NHLPeriod.progress(status: status, period: number, secondsRemaining: remaining),
            competition: "NHL", venue: nonEmpty(game.venue?.default), home: home, away: away, score: .teamTotals(score))
    }

    /// Where the game stands; `field` names `gameState` in errors.
    static func status(gameState: String, scheduleState: String?, intermission: Bool, field: String) throws(InputError) -> MatchStatus {
        let over = gameState == "FINAL" || gameState == "OFF"
        if scheduleState == "CNCL" { return .abandoned }
        if scheduleState == "PPD" || scheduleState == "SUSP", !over { return .postponed }
        switch gameState {
        case "FUT", "PRE": return .scheduled
        case "LIVE", "CRIT": return intermission ? .break : .live
        case "FINAL", "OFF": return .completed
        case "PPD": return .postponed
        case "CNCL": return .abandoned
        default: throw InputError(field: field, reason: "unknown value '\(gameState.prefix(40))'")
        }
    }

    private static func team(_ team: NHLWebGame.Team, field: String) throws(InputError) -> Team {
        guard team.id > 0 else { throw InputError(field: field + ".id", reason: "must be a positive number, got \(team.id)") }
        let abbrev = nonEmpty(team.abbrev)
        let place = nonEmpty(team.placeName?.default)
        let common = nonEmpty(team.commonName?.default)
        let name: String
        if let place, let common {
            // "Utah" + "Utah Hockey Club" is not "Utah Utah Hockey Club".
            name = common.hasPrefix(place) ? common : place + " " + common
        } else if let named = nonEmpty(team.name?.default) ?? common ?? place ?? abbrev {
            name = named
        } else {
            throw InputError(field: field + ".name", reason: "missing (no name, commonName, placeName or abbrev)")
        }
        return Team(id: String(team.id), name: name, short: abbrev)
    }

    private static func goals(_ value: Int?, field: String) throws(InputError) -> Int {
        let goals = value ?? 0
        guard (0...1_000).contains(goals) else { throw InputError(field: field, reason: "must be in 0...1000, got \(goals)") }
        return goals
    }

    private static func events(_ body: NHLPlayByPlayBody, home: Team, away: Team) throws(InputError) -> [MatchEvent] {
        let plays = (body.plays ?? []).enumerated().filter { $0.element.typeDescKey == "goal" }
            .sorted { ($0.element.sortOrder ?? $0.offset) < ($1.element.sortOrder ?? $1.offset) }
        var names: [Int: String] = [:]
        for spot in body.rosterSpots ?? [] {
            guard let id = spot.playerId else { continue }
            let parts = [spot.firstName?.default, spot.lastName?.default].compactMap { nonEmpty($0) }
            if !parts.isEmpty { names[id] = parts.joined(separator: " ") }
        }
        var events: [MatchEvent] = []
        for (index, play) in plays.suffix(eventLimit) {
            guard let eventId = play.eventId else { throw InputError(field: "plays[\(index)].eventId", reason: "missing") }
            let details = play.details
            let descriptor = play.periodDescriptor
            let number = descriptor?.number ?? 0
            guard NHLPeriod.numbers.contains(number) else {
                throw InputError(field: "plays[\(index)].periodDescriptor.number", reason: "must be in 0...20, got \(number)")
            }
            let period = NHLPeriod.label(number: number, type: descriptor?.periodType, regulationPeriods: descriptor?.maxRegulationPeriods ?? 3)
            let shootout = period == "SO"
            let team = details?.eventOwnerTeamId.flatMap { $0 == Int(home.id) ? home.short : $0 == Int(away.id) ? away.short : nil }
            var text = (team.map { $0 + " " } ?? "") + (shootout ? "shootout goal" : "goal")
            if let scorer = details?.scoringPlayerId.flatMap({ names[$0] }) {
                text += ": " + scorer + (shootout ? "" : details?.scoringPlayerTotal.map { " (\($0))" } ?? "")
            }
            if !shootout, let h = details?.homeScore, let a = details?.awayScore {
                text += " · \(home.short) \(h)-\(a) \(away.short)"
            }
            let when = [period, shootout ? nil : play.timeInPeriod.flatMap { NHLPeriod.seconds($0) != nil ? $0 : nil }]
                .compactMap { $0 }.joined(separator: " ")
            if !when.isEmpty { text += " · " + when }
            events.append(MatchEvent(id: "goal-\(eventId)", type: shootout ? "shootout-goal" : "goal", text: text.prefixUppercased()))
        }
        return events
    }

    static func nonEmpty(_ text: String?) -> String? {
        guard let text, !text.allSatisfy(\.isWhitespace) else { return nil }
        return text.trimmingCharacters(in: .whitespaces)
    }

    static func wholeSeconds(_ date: Date) -> Date {
        Date(timeIntervalSince1970: date.timeIntervalSince1970.rounded(.down))
    }
}

extension String {
    /// "goal" → "Goal"; "FLA goal" unchanged.
    fileprivate func prefixUppercased() -> String {
        guard let first else { return self }
        return first.uppercased() + dropFirst()
    }
}
