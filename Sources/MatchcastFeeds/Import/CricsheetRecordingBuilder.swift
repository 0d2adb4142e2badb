import Foundation
import MatchcastCore

/// Walks a Cricsheet match ball by ball for `CricsheetImporter`.
struct CricsheetRecordingBuilder {
    private let match: CricsheetMatch
    private let base: MatchSnapshot
    private let format: CricketScore.Format
    private let oversLimit: Int?
    private let finalStatus: MatchStatus
    private let winner: String?
    private let method: String?
    private var timeline: MatchTimeline
    private var completed: [CricketScore.Innings] = []
    private var events: [MatchEvent] = []

    init(match: CricsheetMatch, id: String) throws(InputError) {
        self.match = match
        let info = match.info
        guard info.teams.count == 2 else {
            throw InputError(field: "info.teams", reason: "expected 2 teams, got \(info.teams.count)")
        }
        let home = TeamNaming.team(info.teams[0])
        let away = TeamNaming.team(info.teams[1])
        guard home.id != away.id else { throw InputError(field: "info.teams", reason: "both teams are '\(home.name)'") }
        format = try Self.format(info.matchType)
        oversLimit = info.overs.flatMap { (1...100).contains($0) ? $0 : nil }
        guard let day = info.dates?.first, let startsAt = JSON.parseDate("\(day)T10:00:00Z") else {
            throw InputError(field: "info.dates", reason: "expected a first date as YYYY-MM-DD")
        }
        var venue = info.venue
        if let city = info.city, let named = venue, !named.contains(city) { venue = "\(named), \(city)" }
        base = MatchSnapshot(
            id: id, sport: .cricket, status: .scheduled, startsAt: startsAt, competition: info.event?.name,
            venue: venue ?? info.city, home: home, away: away,
            score: .cricket(CricketScore(format: format, oversLimit: oversLimit, innings: [])))
        let outcome = info.outcome
        finalStatus = outcome?.result == "no result" ? .abandoned : .completed
        method = outcome?.method
        if let name = outcome?.winner ?? outcome?.eliminator ?? outcome?.bowlOut {
            guard let side = info.teams.firstIndex(of: name) else {
                throw InputError(field: "info.outcome.winner", reason: "'\(name)' is not one of info.teams")
            }
            winner = side == 0 ? home.id : away.id
        } else {
            winner = nil
        }
        timeline = MatchTimeline(matchId: id, origin: startsAt)
    }

    mutating func build() throws(InputError) -> [RecordingLine] {
        try timeline.append(base, at: 0, retryAfterMs: MatchTimeline.Pace.scheduled)
        let played = match.innings.indices.filter { !(match.innings[$0].overs ?? []).allSatisfy(\.deliveries.isEmpty) }
        for (position, index) in played.enumerated() {
            var gap = CricsheetImporter.deliverySeconds
            if position > 0 {
                try timeline.append(snapshot(.break, batters: [], bowler: nil), after: gap, retryAfterMs: MatchTimeline.Pace.pause)
                gap = CricsheetImporter.inningsBreakSeconds - gap
            }
            try play(index, firstGap: gap, endsMatch: position == played.count - 1)
        }
        if played.isEmpty || finalStatus == .abandoned {
            if !played.isEmpty {
                // Rain: the feed shows a stoppage before the match is called off.
                try timeline.append(
                    snapshot(.break, batters: [], bowler: nil), after: CricsheetImporter.deliverySeconds,
                    retryAfterMs: MatchTimeline.Pace.final)
            }
            try timeline.append(
                snapshot(finalStatus, batters: [], bowler: nil, final: true), after: CricsheetImporter.abandonSeconds,
                retryAfterMs: MatchTimeline.Pace.final)
        }
        return timeline.lines
    }

    /// Emits one snapshot per delivery of innings `index`.
    private mutating func play(_ index: Int, firstGap: Double, endsMatch: Bool) throws(InputError) {
        let data = match.innings[index]
        let field = "innings[\(index)]"
        guard let side = match.info.teams.firstIndex(of: data.team) else {
            throw InputError(field: "\(field).team", reason: "'\(data.team)' is not one of info.teams")
        }
        let team = side == 0 ? base.home.id : base.away.id
        let superOver = data.superOver ?? false
        var limit: Int?
        if let overs = data.target?.overs, overs > 0 { limit = Int(overs.rounded(.up)) }
        var progress = CricsheetInningsProgress(
            innings: CricketScore.Innings(
                team: team, runs: 0, wickets: 0, balls: 0,
                target: data.target?.runs ?? target(for: team, superOver: superOver),
                superOver: superOver, oversLimit: limit))
        let balls = (data.overs ?? []).flatMap(\.deliveries)
        var gap = firstGap
        for (number, ball) in balls.enumerated() {
            let dismissals = progress.record(ball)
            let isLast = number == balls.count - 1
            if isLast, data.declared == true { progress.innings.declared = true }
            let t = timeline.t + gap
            for (k, dismissal) in dismissals.enumerated() {
                let id = "w\(index + 1)-\(number + 1)" + (k > 0 ? "-\(k + 1)" : "")
                events.append(
                    MatchEvent(id: id, type: "wicket", at: timeline.origin.addingTimeInterval(t), text: dismissal.text))
            }
            let ends = isLast && endsMatch && finalStatus == .completed
            var snap = snapshot(
                ends ? .completed : .live, current: progress.innings,
                batters: progress.battersIn(nextStriker: isLast ? nil : balls[number + 1].batter),
                bowler: progress.bowlerFigures, final: ends)
            snap.events = Array(events.suffix(CricsheetImporter.eventLimit))
            try timeline.append(snap, at: t, retryAfterMs: ends ? MatchTimeline.Pace.final : MatchTimeline.Pace.live)
            gap = CricsheetImporter.deliverySeconds
        }
        completed.append(progress.innings)
    }

    /// The target an innings chases when the file states none.
    private func target(for team: String, superOver: Bool) -> Int? {
        let group = completed.filter { $0.superOver == superOver }
        if superOver || format != .test {
            // Innings come in pairs (the match, then each super over); the second of a pair chases.
            guard group.count % 2 == 1, let first = group.last else { return nil }
            return first.runs + 1
        }
        guard group.count == 3 else { return nil }
        let theirs = group.filter { $0.team != team }.reduce(0) { $0 + $1.runs }
        let ours = group.filter { $0.team == team }.reduce(0) { $0 + $1.runs }
        return theirs - ours + 1
    }

    private func snapshot(
        _ status: MatchStatus, current: CricketScore.Innings? = nil, batters: [CricketScore.Batter],
        bowler: CricketScore.Bowler?, final: Bool = false
    ) -> MatchSnapshot {
        var snap = base
        snap.status = status
        snap.events = Array(events.suffix(CricsheetImporter.eventLimit))
        snap.score = .cricket(
            CricketScore(
                format: format, oversLimit: oversLimit, innings: completed + (current.map { [$0] } ?? []),
                batters: batters, bowler: bowler, method: final ? method : nil, winner: final ? winner : nil))
        return snap
    }

    private static func format(_ matchType: String) throws(InputError) -> CricketScore.Format {
        switch matchType.uppercased() {
        case "T20", "IT20": return .t20
        case "ODI", "ODM": return .odi
        case "TEST", "MDM": return .test
        default:
            throw InputError(field: "info.match_type", reason: "unsupported match type '\(matchType.prefix(40))'")
        }
    }
}
