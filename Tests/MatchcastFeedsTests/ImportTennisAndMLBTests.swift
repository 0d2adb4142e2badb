import Foundation
import MatchcastCore
import Testing

@testable import MatchcastFeeds

/// `TennisPBPImporter` and `MLBImporter` on small inputs written here.
@Suite("Tennis and MLB importers")
struct ImportTennisAndMLBTests {
    /// Server1 wins every point: 6-0 6-0, 48 points.
    static let bagelSet = ["SSSS", "RRRR", "SSSS", "RRRR", "SSSS", "RRRR"].joined(separator: ";")
    static let csv = Data("""
        pbp_id,date,tny_name,tour,draw,server1,server2,winner,pbp,score,adf_flag,wh_minutes
        42,03 Jan 17,ATPDoha,ATP,Main,Ann Server,"Bob Returner, Jr",1,\(bagelSet).\(bagelSet),6-0 6-0,1,40

        """.utf8)

    @Test func onePointPerSnapshotWithChangeovers() throws {
        let rows = try TennisPBPImporter.rows(csv: Self.csv)
        #expect(rows.map(\.pbpId) == ["42"])
        #expect(rows.first?.server2 == "Bob Returner, Jr")
        let lines = try TennisPBPImporter.recording(csv: Self.csv, pbpId: "42")
        #expect(ImportCheck.invariants(lines, id: "pbp-42") == [])
        let responses = try ImportCheck.responses(lines)
        #expect(responses.count == 49)
        let first = responses[0].match
        #expect(first.home == Team(id: "ann-server", name: "Ann Server", short: "SER"))
        #expect(first.away.short == "JR")
        #expect(first.startsAt == JSON.parseDate("2017-01-03T10:00:00Z"))
        #expect(first.competition == "ATPDoha")
        // Game 1 ends after point 4 (ends change, no rest), game 3 after point 12 (a rest).
        #expect(lines[1].t == 35 && lines[4].t == 140 && lines[5].t == 175)
        #expect(lines[12].t == 420 && lines[13].t == 545)
        #expect(responses[12].retryAfterMs == 30_000 && responses[11].retryAfterMs == 5_000)
        guard case .tennis(let score) = responses[48].match.score else { Issue.record("not tennis"); return }
        #expect(score.rules == TennisRules(bestOf: 3, firstServer: .home, finalSetTiebreak: 7))
        #expect(score.points == String(repeating: "H", count: 48))
        let rendered = try MatchRenderer.render(responses[48].match)
        guard case .tennis(let derived) = rendered.derived else { Issue.record("not tennis"); return }
        #expect(derived.sets == [[6, 0], [6, 0]])
        #expect(derived.winner == .home)
        #expect(responses[48].match.status == .completed)
    }

    @Test func unknownRowAndBadInput() throws {
        #expect(throws: InputError(field: "pbp_id", reason: "no row with pbp_id 7")) {
            try TennisPBPImporter.recording(csv: Self.csv, pbpId: "7")
        }
        #expect(throws: InputError(field: "pbp", reason: "missing column")) {
            try TennisPBPImporter.rows(csv: Data("pbp_id,date,tny_name,server1,server2,winner,score\n".utf8))
        }
        var row = try #require(try TennisPBPImporter.rows(csv: Self.csv).first)
        row.pbp = "SSSX"
        #expect(throws: InputError.self) { try TennisPBPImporter.recording(row) }
    }

    static func play(_ index: Int, inning: Int, half: String, outs: Int, home: Int, away: Int, start: String, end: String, scoring: Bool = false, onFirst: Bool = false) -> String {
        let matchup = onFirst ? #"{"postOnFirst": {"id": 1}}"# : "{}"
        return """
            {"result": {"description": "Play \(index)", "homeScore": \(home), "awayScore": \(away)},
             "about": {"atBatIndex": \(index), "inning": \(inning), "halfInning": "\(half)", "startTime": "\(start)", "endTime": "\(end)", "isScoringPlay": \(scoring), "isComplete": true},
             "count": {"outs": \(outs)}, "matchup": \(matchup)}
            """
    }

    static let feed = Data("""
        {"gamePk": 9, "metaData": {"wait": 10, "timeStamp": "20250412_210000"},
         "gameData": {"status": {"abstractGameState": "Final", "detailedState": "Final"},
                      "datetime": {"dateTime": "2025-04-12T20:00:00Z"},
                      "teams": {"away": {"id": 147, "name": "New York Yankees", "abbreviation": "NYY"},
                                "home": {"id": 111, "name": "Boston Red Sox", "abbreviation": "BOS"}}},
         "liveData": {
           "linescore": {"currentInning": 1, "isTopInning": false, "outs": 3, "teams": {"home": {"runs": 1}, "away": {"runs": 0}}},
           "plays": {"scoringPlays": [1], "allPlays": [
             \(play(0, inning: 1, half: "top", outs: 3, home: 0, away: 0, start: "2025-04-12T20:10:00.000Z", end: "2025-04-12T20:10:30.500Z")),
             \(play(1, inning: 1, half: "bottom", outs: 0, home: 1, away: 0, start: "2025-04-12T20:13:00Z", end: "2025-04-12T20:14:00Z", scoring: true, onFirst: true))
           ]}}}
        """.utf8)

    @Test func mlbPlayByPlay() throws {
        let lines = try MLBImporter.recording(Self.feed)
        #expect(ImportCheck.invariants(lines, id: "mlb:9") == [])
        #expect(lines.map(\.t) == [0, 30.5, 240, 3000])
        let responses = try ImportCheck.responses(lines)
        #expect(responses.map(\.match.status) == [.scheduled, .live, .live, .completed])
        #expect(responses.map(\.retryAfterMs) == [60_000, 30_000, 10_000, 60_000])
        #expect(responses[2].match.score == .baseball(BaseballScore(home: 1, away: 0, inning: 1, half: .bottom, outs: 0, bases: [true, false, false])))
        #expect(responses[2].match.events.map(\.id) == ["play-1"])
        #expect(responses[2].match.home.short == "BOS")
        #expect(responses[2].match.updatedAt == JSON.parseDate("2025-04-12T20:14:00Z"))
        guard case .baseball(let final) = responses[3].match.score else { Issue.record("not baseball"); return }
        #expect(final.home == 1 && final.away == 0)
        #expect(try MLBImporter.recording(Self.feed, id: "bos-nyy").first?.request == "/matches/bos-nyy")
    }
}
