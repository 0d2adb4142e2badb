import Foundation
import MatchcastCore

extension ESPNEventConverter {
    /// Goals, cards and scoring plays as `MatchEvent`s, newest last, at most `eventLimit`.
    ///
    /// Kinds: `goal`, `ownGoal`, `shootout` (a shootout kick scored: not in the score),
    /// `yellowCard`, `redCard` for soccer; `score` for other sports' scoring plays. Other plays
    /// (substitutions, delays, kick-off) are left out.
    ///
    /// Ids: soccer plays are `<kind>-<team id>-<clock seconds>` (`goal-203-513`), with `-2`, `-3`
    /// for repeats, because the scoreboard's `details` have no ids and a match must keep its event
    /// ids whether its summary answered or not. Other sports' scoring plays come only from
    /// summaries, whose ids are stable: `play-<id>`.
    /// - Parameter scoring: the plays come from a summary's `scoringPlays`, which need not say `scoringPlay`.
    static func keyEvents(_ plays: [ESPNPlayBody], sport: Sport, home: Team, away: Team, scoring: Bool = false) -> [MatchEvent] {
        var events: [MatchEvent] = []
        var seen: [String: Int] = [:]
        for play in plays {
            guard let kind = kind(of: play, sport: sport, scoring: scoring) else { continue }
            let teamId = play.team?.id ?? ""
            let short = teamId == home.id ? home.short : teamId == away.id ? away.short
                : (play.team?.abbreviation ?? play.team?.displayName ?? "")
            let clock = play.clock?.displayValue.flatMap { $0.isEmpty ? nil : $0 }
            var base: String
            if sport != .football, let id = play.id, !id.isEmpty {
                base = "play-\(id.prefix(40))"
            } else {
                let seconds = play.clock?.value.flatMap { $0.isFinite && abs($0) < 1e9 ? Int($0) : nil }.map(String.init) ?? "x"
                let period = sport == .football ? "" : play.period?.number.map { "-p\($0)" } ?? ""
                base = "\(kind)-\(teamId.isEmpty ? "x" : String(teamId.prefix(20)))\(period)-\(seconds)"
            }
            let count = (seen[base] ?? 0) + 1
            seen[base] = count
            if count > 1 { base += "-\(count)" }
            events.append(
                MatchEvent(
                    id: base, type: kind, at: play.wallclock.flatMap(parseDate),
                    text: text(play, kind: kind, sport: sport, clock: clock, team: short)))
        }
        return Array(events.suffix(eventLimit))
    }

    private static func kind(of play: ESPNPlayBody, sport: Sport, scoring: Bool) -> String? {
        let named = [play.type?.type, play.type?.text].compactMap { $0?.lowercased() }.joined(separator: " ")
        if play.scoringPlay ?? scoring {
            guard sport == .football else { return "score" }
            if play.shootout == true { return "shootout" }
            return play.ownGoal == true || named.contains("own") ? "ownGoal" : "goal"
        }
        guard sport == .football else { return nil }
        if play.redCard == true || (named.contains("red") && named.contains("card")) { return "redCard" }
        if play.yellowCard == true || (named.contains("yellow") && named.contains("card")) { return "yellowCard" }
        return nil
    }

    /// `9' GOAL MEX · Julián Quiñones`, `49' Red card RSA · Sphephelo Sithole`; other sports
    /// `Q2 4:12 KC · <ESPN's text>`.
    private static func text(_ play: ESPNPlayBody, kind: String, sport: Sport, clock: String?, team: String) -> String {
        let label: String
        switch kind {
        case "goal": label = "GOAL"
        case "ownGoal": label = "Own goal"
        case "shootout": label = "Shootout goal"
        case "redCard": label = "Red card"
        case "yellowCard": label = "Yellow card"
        default: label = play.type?.text ?? "Score"
        }
        let who = play.athletesInvolved?.first?.displayName ?? play.participants?.first?.athlete?.displayName
        var head = [clock, sport == .football ? label : nil, team.isEmpty ? nil : team].compactMap { $0 }.joined(separator: " ")
        if sport == .football {
            if let who, !who.isEmpty { head += " · \(who)" }
        } else {
            let what = play.text.flatMap { $0.isEmpty ? nil : $0 } ?? label
            head += (head.isEmpty ? "" : " · ") + what
        }
        return String(head.prefix(200))
    }
}
