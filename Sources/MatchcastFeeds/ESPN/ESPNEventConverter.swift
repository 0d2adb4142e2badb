import Foundation
import MatchcastCore

/// One scoreboard or team-schedule event, converted or refused with the field at fault.
public struct ESPNConvertedEvent: Sendable, Hashable {
    /// ESPN's event id, when at least that much could be read.
    public var eventId: String?
    public var result: Result<MatchSnapshot, InputError>

    /// The snapshot, if the event converted.
    public var snapshot: MatchSnapshot? { try? result.get() }
}

/// Converts ESPN site-API events (scoreboard, team schedule, summary) into `MatchSnapshot`s.
///
/// - `id` is `espn:<event id>`; `home`/`away` from `competitors[].homeAway` (team id = ESPN team
///   id, name = `displayName`, short = `abbreviation`); `startsAt` from `date`; `venue` from the
///   competition's venue; `competition` from the league's abbreviation or name when the body has it.
/// - `status` from `status.type.state` (`pre` scheduled, `in` live, `post` completed) refined by
///   `status.type.name`: halftime, end of a period and delays are `break`; postponed and
///   suspended are `postponed`; canceled and abandoned are `abandoned`; a `post` that is not
///   `completed` (and not postponed) is `abandoned`, as the match is over without a result.
/// - `score`: `competitors[].score` (a string, a number or `{value, displayValue}`). Two totals
///   with ESPN's `displayClock` and a period label (`ESPNLeague` lists them) for team sports;
///   `HT`, `FT`/`AET`/`PEN` and `F`/`F/OT`/`F/SO` label halftime and results, whose clock is nil.
///   Baseball: the inning is `period`, the half from `Top`/`Bot`/`Mid`/`End` in the status detail
///   (`Mid` and `End` are a `break` with 3 outs), outs and runners from `competitions[0].situation`.
/// - `events`: goals and cards from the scoreboard's `details`, or from the summary's `keyEvents`
///   (`scoringPlays` for other sports), newest last, at most 20; ids are built from what both
///   sources share (kind, team, clock), so a match reads the same with or without its summary.
/// - Sports Matchcast has no model for are refused per event; a missing or malformed field
///   fails that event with an `InputError` naming the field (`events[3].competitions[0]…`).
public enum ESPNEventConverter {
    /// Key events kept, newest last.
    static let eventLimit = 20

    /// Every event of a scoreboard or team schedule, in order. Throws only when the body is not
    /// JSON or has no `events` array; each event converts or fails on its own.
    public static func events(fromScoreboard data: Data, league: ESPNLeague) throws(InputError) -> [ESPNConvertedEvent] {
        let body = try JSON.decode(ESPNScoreboardBody.self, from: data)
        let named = body.leagues?.count == 1 ? body.leagues?.first : nil
        return body.events.enumerated().map { index, item in
            switch item.result {
            case .failure(let error):
                return ESPNConvertedEvent(eventId: nil, result: .failure(error))
            case .success(let event):
                do {
                    let snapshot = try snapshot(event, league: league, bodyLeague: named, path: "events[\(index)]")
                    return ESPNConvertedEvent(eventId: event.id, result: .success(snapshot))
                } catch {
                    return ESPNConvertedEvent(eventId: event.id, result: .failure(InputError(error)))
                }
            }
        }
    }

    /// The match a summary describes: its `header` as the event, its key events, its venue.
    public static func snapshot(fromSummary data: Data, league: ESPNLeague) throws(InputError) -> MatchSnapshot {
        let body = try JSON.decode(ESPNSummaryBody.self, from: data)
        let base = try snapshot(body.header, league: league, bodyLeague: nil, path: "header")
        return enrich(base, with: body, league: league)
    }

    /// `snapshot` with the summary's key events and venue. The scoreboard stays the authority for
    /// score, status and clock: the summary's header has no clock.
    static func enrich(_ snapshot: MatchSnapshot, with summary: ESPNSummaryBody, league: ESPNLeague) -> MatchSnapshot {
        var snapshot = snapshot
        if let plays = summary.keyEvents {
            snapshot.events = keyEvents(plays, sport: snapshot.sport, home: snapshot.home, away: snapshot.away)
        } else if let plays = summary.scoringPlays {
            snapshot.events = keyEvents(plays, sport: snapshot.sport, home: snapshot.home, away: snapshot.away, scoring: true)
        }
        if let venue = summary.gameInfo?.venue.flatMap({ $0.fullName ?? $0.displayName }), !venue.isEmpty {
            snapshot.venue = venue
        }
        if snapshot.competition == nil, let named = summary.header.league {
            snapshot.competition = competitionName(named)
        }
        return snapshot
    }

    /// Reads the summary body on its own (the transport checks it belongs to the match it serves).
    static func summaryBody(_ data: Data) throws(InputError) -> ESPNSummaryBody {
        try JSON.decode(ESPNSummaryBody.self, from: data)
    }

    // MARK: One event

    static func snapshot(
        _ event: ESPNEventBody, league: ESPNLeague, bodyLeague: ESPNEventBody.League?, path: String
    ) throws(InputError) -> MatchSnapshot {
        guard let id = event.id?.trimmingCharacters(in: .whitespaces), !id.isEmpty else {
            throw InputError(field: "\(path).id", reason: "missing")
        }
        guard id.utf8.count <= 100 else { throw InputError(field: "\(path).id", reason: "longer than 100 bytes") }
        let sport: Sport
        do {
            sport = try league.requireSport()
        } catch {
            throw InputError(field: path, reason: "event \(id.prefix(40)): \(error.reason)")
        }
        guard let competition = event.competitions?.first else {
            throw InputError(field: "\(path).competitions", reason: "missing (no competition to read)")
        }
        let cpath = "\(path).competitions[0]"
        let (statusValue, statusPath) = competition.status.map { ($0, "\(cpath).status") } ?? (event.status, "\(path).status")
        guard let statusBody = statusValue else { throw InputError(field: "\(path).status", reason: "missing") }
        var status = try self.status(statusBody, path: statusPath)

        let (home, homeScore) = try side("home", of: competition, status: status, path: cpath)
        let (away, awayScore) = try side("away", of: competition, status: status, path: cpath)

        let regulation = competition.format?.regulation?.periods.flatMap { (1...20).contains($0) ? $0 : nil }
            ?? league.defaultRegulationPeriods
        let score: Score
        if sport == .baseball {
            let (baseball, inBreak) = try baseballScore(
                home: homeScore, away: awayScore, status: status, statusBody: statusBody, statusPath: statusPath,
                situation: competition.situation, situationPath: "\(cpath).situation")
            if inBreak && status == .live { status = .break }
            score = .baseball(baseball)
        } else {
            let labels = teamTotalsLabels(
                sport: sport, status: status, statusBody: statusBody, regulation: regulation)
            score = .teamTotals(TeamScore(home: homeScore, away: awayScore, period: labels.period, clock: labels.clock))
        }

        var startsAt: Date?
        if let text = competition.date ?? event.date {
            guard let date = parseDate(text) else {
                throw InputError(field: "\(path).date", reason: "not an ISO 8601 date: '\(text.prefix(40))'")
            }
            startsAt = date
        }
        let venue = [competition.venue?.fullName, competition.venue?.displayName, event.venue?.fullName, event.venue?.displayName]
            .compactMap { $0 }.first { !$0.isEmpty }
        let events = keyEvents(competition.details ?? [], sport: sport, home: home, away: away)
        return MatchSnapshot(
            id: "espn:\(id)", sport: sport, status: status, startsAt: startsAt,
            competition: (event.league ?? bodyLeague).flatMap(competitionName), venue: venue,
            home: home, away: away, score: score, events: events)
    }

    private static func competitionName(_ league: ESPNEventBody.League) -> String? {
        [league.abbreviation, league.name].compactMap { $0 }.first { !$0.isEmpty }
    }

    private static func side(
        _ which: String, of competition: ESPNEventBody.Competition, status: MatchStatus, path: String
    ) throws(InputError) -> (Team, Int) {
        guard let competitors = competition.competitors else {
            throw InputError(field: "\(path).competitors", reason: "missing (Matchcast needs a home and an away competitor)")
        }
        let matching = competitors.indices.filter { competitors[$0].homeAway == which }
        guard matching.count == 1, let index = matching.first else {
            throw InputError(
                field: "\(path).competitors",
                reason: "expected one competitor with homeAway '\(which)', found \(matching.count) among \(competitors.count)")
        }
        let competitor = competitors[index]
        let cpath = "\(path).competitors[\(index)]"
        guard let teamId = (competitor.team?.id ?? competitor.id), !teamId.isEmpty else {
            throw InputError(field: "\(cpath).team.id", reason: "missing")
        }
        guard let name = [competitor.team?.displayName, competitor.team?.name].compactMap({ $0 }).first(where: { !$0.isEmpty }) else {
            throw InputError(field: "\(cpath).team.displayName", reason: "missing")
        }
        let short = competitor.team?.abbreviation.flatMap { $0.isEmpty ? nil : $0 }
        let score: Int
        if let value = competitor.score {
            guard let count = value.count else {
                throw InputError(field: "\(cpath).score", reason: "expected a whole number, got '\(value.text.prefix(40))'")
            }
            score = count
        } else if status == .scheduled || status == .postponed {
            score = 0
        } else {
            throw InputError(field: "\(cpath).score", reason: "missing")
        }
        return (Team(id: teamId, name: name, short: short), score)
    }

    // MARK: Status

    static func status(_ body: ESPNEventBody.Status, path: String) throws(InputError) -> MatchStatus {
        guard let kind = body.type else { throw InputError(field: "\(path).type", reason: "missing") }
        guard let state = kind.state else { throw InputError(field: "\(path).type.state", reason: "missing") }
        let name = (kind.name ?? "").uppercased()
        if name.contains("POSTPONED") || name.contains("SUSPENDED") { return .postponed }
        if name.contains("CANCELED") || name.contains("CANCELLED") || name.contains("ABANDONED") { return .abandoned }
        switch state {
        case "pre":
            return .scheduled
        case "in":
            let pause = ["HALFTIME", "END_", "INTERMISSION", "DELAY"].contains { name.contains($0) }
            return pause ? .break : .live
        case "post":
            return kind.completed == true ? .completed : .abandoned
        default:
            throw InputError(field: "\(path).type.state", reason: "unknown value '\(state.prefix(40))' (expected pre, in or post)")
        }
    }

    // MARK: Team totals

    /// Period and clock labels for two-total sports.
    static func teamTotalsLabels(
        sport: Sport, status: MatchStatus, statusBody: ESPNEventBody.Status, regulation: Int
    ) -> (period: String?, clock: String?) {
        let period = max(statusBody.period ?? 0, 0)
        let name = (statusBody.type?.name ?? "").uppercased()
        let detail = (statusBody.type?.shortDetail ?? statusBody.type?.detail ?? "").uppercased()
        // `Final/SO`, `FT-Pens`, `STATUS_FINAL_PEN`, `STATUS_SHOOTOUT`: words, so `SUSPENDED` is no `PEN`.
        let words = Set(detail.split { !$0.isLetter }.map(String.init))
        let shootout = name.contains("SHOOTOUT") || name.hasSuffix("_PEN") || !words.isDisjoint(with: ["SO", "PEN", "PENS"])
        switch status {
        case .scheduled, .postponed:
            return (nil, nil)
        case .completed:
            if sport == .football {
                if shootout || period > regulation + 2 { return ("PEN", nil) }
                return (period > regulation || name.contains("AET") ? "AET" : "FT", nil)
            }
            if period <= regulation { return ("F", nil) }
            return (sport == .hockey && shootout ? "F/SO" : "F/OT", nil)
        case .break:
            if name.contains("HALFTIME") { return ("HT", nil) }
            return (periodLabel(sport: sport, period: period, regulation: regulation, shootout: shootout), nil)
        case .abandoned:
            return (periodLabel(sport: sport, period: period, regulation: regulation, shootout: shootout), nil)
        case .live:
            let clock = statusBody.displayClock.flatMap { $0.isEmpty ? nil : $0 }
            return (periodLabel(sport: sport, period: period, regulation: regulation, shootout: shootout), clock)
        }
    }

    /// `1H`/`2H`/`ET`/`PEN` (soccer), `Q3`, `P2`, `OT`, `2OT`, `SO`; nil before the first period.
    static func periodLabel(sport: Sport, period: Int, regulation: Int, shootout: Bool) -> String? {
        guard period > 0 else { return nil }
        if sport == .football {
            if period <= regulation { return "\(period)H" }
            return period <= regulation + 2 && !shootout ? "ET" : "PEN"
        }
        if period <= regulation {
            switch regulation {
            case 2: return "\(period)H"
            case 3: return "P\(period)"
            default: return "Q\(period)"
            }
        }
        if sport == .hockey && shootout && period > regulation + 1 { return "SO" }
        let overtime = period - regulation
        return overtime == 1 ? "OT" : "\(overtime)OT"
    }

    // MARK: Baseball

    /// The score, and whether the detail says the game is between halves (`Mid 5th`, `End 5th`).
    static func baseballScore(
        home: Int, away: Int, status: MatchStatus, statusBody: ESPNEventBody.Status, statusPath: String,
        situation: ESPNEventBody.Situation?, situationPath: String
    ) throws(InputError) -> (BaseballScore, Bool) {
        let period = statusBody.period ?? 0
        guard period <= 99 else { throw InputError(field: "\(statusPath).period", reason: "must be in 0...99, got \(period)") }
        let inning = max(period, 1)
        guard status != .scheduled && status != .postponed else {
            return (BaseballScore(home: home, away: away, inning: 1, half: .top, outs: 0, bases: [false, false, false]), false)
        }
        let detail = statusBody.type?.shortDetail ?? statusBody.type?.detail ?? ""
        let word = detail.split(separator: " ").first.map { $0.lowercased() } ?? ""
        switch word {
        case "mid", "middle":
            return (BaseballScore(home: home, away: away, inning: inning, half: .top, outs: 3, bases: [false, false, false]), true)
        case "end":
            return (BaseballScore(home: home, away: away, inning: inning, half: .bottom, outs: 3, bases: [false, false, false]), true)
        default:
            break
        }
        let half: BaseballScore.Half = word == "top" ? .top : (word == "bot" || word == "bottom") ? .bottom : status == .completed ? .bottom : .top
        if status == .completed || status == .abandoned {
            return (BaseballScore(home: home, away: away, inning: inning, half: half, outs: 3, bases: [false, false, false]), false)
        }
        let outs = situation?.outs ?? 0
        guard (0...3).contains(outs) else { throw InputError(field: "\(situationPath).outs", reason: "must be in 0...3, got \(outs)") }
        let bases = [situation?.onFirst ?? false, situation?.onSecond ?? false, situation?.onThird ?? false]
        return (BaseballScore(home: home, away: away, inning: inning, half: half, outs: outs, bases: bases), false)
    }

    // MARK: Dates

    /// ESPN writes `2026-06-11T19:00Z` (no seconds) as well as full ISO 8601.
    static func parseDate(_ text: String) -> Date? {
        if let date = JSON.parseDate(text) { return date }
        let bytes = Array(text.utf8)
        if bytes.count == 17, bytes[10] == UInt8(ascii: "T"), bytes[16] == UInt8(ascii: "Z") {
            return JSON.parseDate(String(text.dropLast()) + ":00Z")
        }
        return nil
    }
}
