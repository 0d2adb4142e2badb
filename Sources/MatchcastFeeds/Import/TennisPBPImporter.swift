import Foundation
import MatchcastCore

/// Turns one match of Jeff Sackmann's point-by-point CSV (tennis_pointbypoint) into a recording of
/// `/matches/{id}`: a `scheduled` snapshot, then one snapshot per point, the last one `completed`.
///
/// - Points via `TennisPointByPoint.convert`; `server1` is home and serves first.
/// - Best of 5 when someone won three sets, else 3; `finalSetTiebreak` as the converter reads it
///   from the last set (7 when it shows nothing).
/// - Timing: the CSV gives a date only. The recording starts at 10:00 UTC that day; a point every
///   35 s, plus a 90 s rest at changeovers (after odd games of a set but the first, and after each set).
public enum TennisPBPImporter {
    /// One match of the CSV.
    public struct Row: Sendable, Hashable {
        public var pbpId: String
        /// `01 Jan 17`.
        public var date: String
        public var tournament: String
        public var server1: String
        public var server2: String
        /// 1 when server1 won, 2 when server2 did.
        public var winner: Int?
        /// Sackmann's point-by-point text.
        public var pbp: String
        /// The final score from the winner's side: "7-6(4) 4-6 6-3".
        public var score: String

        public init(
            pbpId: String, date: String, tournament: String, server1: String, server2: String, winner: Int?,
            pbp: String, score: String
        ) {
            self.pbpId = pbpId
            self.date = date
            self.tournament = tournament
            self.server1 = server1
            self.server2 = server2
            self.winner = winner
            self.pbp = pbp
            self.score = score
        }
    }

    /// Seconds from one point to the next.
    public static let pointSeconds: Double = 35
    /// Extra seconds of rest at a changeover.
    public static let changeoverSeconds: Double = 90

    /// Every match in the CSV, in file order.
    public static func rows(csv: Data) throws(InputError) -> [Row] {
        let table = try CSVTable(csv)
        let columns = try ["pbp_id", "date", "tny_name", "server1", "server2", "winner", "pbp", "score"].map {
            name throws(InputError) in try table.column(name)
        }
        return table.rows.map { fields in
            Row(
                pbpId: fields[columns[0]], date: fields[columns[1]], tournament: fields[columns[2]],
                server1: fields[columns[3]], server2: fields[columns[4]], winner: Int(fields[columns[5]]),
                pbp: fields[columns[6]], score: fields[columns[7]])
        }
    }

    /// The recording of the match whose `pbp_id` is `pbpId`; the match id is `id`, else `pbp-<pbpId>`.
    public static func recording(csv: Data, pbpId: String, id: String? = nil) throws(InputError) -> [RecordingLine] {
        guard let row = try rows(csv: csv).first(where: { $0.pbpId == pbpId }) else {
            throw InputError(field: "pbp_id", reason: "no row with pbp_id \(pbpId)")
        }
        return try recording(row, id: id)
    }

    /// The recording of one row; the match id is `id`, else `pbp-<pbpId>`.
    public static func recording(_ row: Row, id: String? = nil) throws(InputError) -> [RecordingLine] {
        let (points, rules) = try convert(row)
        guard let startsAt = date(row.date) else {
            throw InputError(field: "date", reason: "expected 'dd Mon yy', got '\(row.date.prefix(40))'")
        }
        let matchId = id ?? "pbp-\(row.pbpId)"
        let base = MatchSnapshot(
            id: matchId, sport: .tennis, status: .scheduled, startsAt: startsAt,
            competition: row.tournament.isEmpty ? nil : row.tournament,
            home: player(row.server1), away: player(row.server2),
            score: .tennis(TennisScore(rules: rules, points: "")))
        var timeline = MatchTimeline(matchId: matchId, origin: startsAt)
        try timeline.append(base, at: 0, retryAfterMs: MatchTimeline.Pace.scheduled)

        let sequence = Array(points.utf8)
        guard !sequence.isEmpty else { throw InputError(field: "pbp", reason: "no points") }
        var previous = try state(points: "", rules: rules)
        var gap = pointSeconds
        for count in 1...sequence.count {
            let prefix = String(decoding: sequence[..<count], as: UTF8.self)
            let now = try state(points: prefix, rules: rules)
            let isLast = count == sequence.count
            let rest = !isLast && isChangeover(from: previous, to: now)
            var snap = base
            snap.status = isLast ? .completed : .live
            snap.score = .tennis(TennisScore(rules: rules, points: prefix))
            let retry = isLast ? MatchTimeline.Pace.final : rest ? MatchTimeline.Pace.pause : MatchTimeline.Pace.live
            try timeline.append(snap, after: gap, retryAfterMs: retry)
            gap = pointSeconds + (rest ? changeoverSeconds : 0)
            previous = now
        }
        return timeline.lines
    }

    private static func convert(_ row: Row) throws(InputError) -> (String, TennisRules) {
        do {
            let converted = try TennisPointByPoint.convert(pbp: row.pbp, server1Is: .home)
            let tiebreak = converted.finalSetTiebreak ?? 7
            let five = TennisRules(bestOf: 5, firstServer: .home, finalSetTiebreak: tiebreak)
            let asFive = try TennisEngine.derive(points: converted.points, rules: five)
            let bestOf = asFive.setsWon.contains(3) ? 5 : 3
            return (converted.points, TennisRules(bestOf: bestOf, firstServer: .home, finalSetTiebreak: tiebreak))
        } catch {
            throw InputError(field: "pbp", reason: error.description)
        }
    }

    private static func state(points: String, rules: TennisRules) throws(InputError) -> TennisState {
        do {
            return try TennisEngine.derive(points: points, rules: rules)
        } catch {
            throw InputError(field: "pbp", reason: error.description)
        }
    }

    /// Players rest after the 3rd, 5th, … game of a set and after each set (not after the first game).
    private static func isChangeover(from before: TennisState, to after: TennisState) -> Bool {
        guard after.gamesPlayed > before.gamesPlayed else { return false }
        if after.setsWon.reduce(0, +) > before.setsWon.reduce(0, +) { return true }
        let games = after.games.reduce(0, +)
        return games % 2 == 1 && games > 1
    }

    /// A player: id the slug of the name, short the first three letters of the surname ("THO").
    static func player(_ name: String) -> Team {
        let surname = name.split(separator: " ").last.map(String.init) ?? name
        let letters = surname.filter(\.isLetter)
        return Team(id: TeamNaming.slug(name), name: name, short: String((letters.isEmpty ? surname : letters).prefix(3)).uppercased())
    }

    /// `01 Jan 17` at 10:00 UTC.
    static func date(_ text: String) -> Date? {
        let parts = text.split(separator: " ")
        let months = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]
        guard parts.count == 3, let day = Int(parts[0]), let year = Int(parts[2]),
            let month = months.firstIndex(of: parts[1].prefix(3).lowercased())
        else { return nil }
        let fullYear = year < 100 ? 2000 + year : year
        let iso = String(format: "%04d-%02d-%02dT10:00:00Z", fullYear, month + 1, day)
        return JSON.parseDate(iso)
    }
}
