import Foundation
import MatchcastCore
import Testing

@testable import MatchcastFeeds

/// `CricsheetImporter` on small matches written here, each built to show one rule.
@Suite("Cricsheet importer")
struct ImportCricsheetTests {
    static func ball(
        _ batter: String, _ nonStriker: String, _ bowler: String = "X Bowler", bat: Int = 0, extras: [String: Int] = [:],
        wicket: (String, String, String?)? = nil
    ) -> String {
        let extra = extras.values.reduce(0, +)
        var parts = [
            #""batter": "\#(batter)", "non_striker": "\#(nonStriker)", "bowler": "\#(bowler)""#,
            #""runs": {"batter": \#(bat), "extras": \#(extra), "total": \#(bat + extra)}"#,
        ]
        if !extras.isEmpty {
            parts.append(#""extras": {"# + extras.sorted { $0.key < $1.key }.map { #""\#($0.key)": \#($0.value)"# }.joined(separator: ", ") + "}")
        }
        if let (out, kind, fielder) = wicket {
            let fielders = fielder.map { #", "fielders": [{"name": "\#($0)"}]"# } ?? ""
            parts.append(#""wickets": [{"player_out": "\#(out)", "kind": "\#(kind)"\#(fielders)}]"#)
        }
        return "{" + parts.joined(separator: ", ") + "}"
    }

    static func match(teams: [String], outcome: String, innings: [String], type: String = "T20") -> Data {
        Data("""
            {"meta": {"data_version": "1.1.0"},
             "info": {"teams": ["\(teams[0])", "\(teams[1])"], "match_type": "\(type)", "overs": 20,
                      "dates": ["2026-04-21"], "venue": "Wankhede Stadium", "city": "Mumbai",
                      "event": {"name": "IPL"}, "outcome": \(outcome)},
             "innings": [\(innings.joined(separator: ", "))]}
            """.utf8)
    }

    static func innings(_ team: String, _ balls: [String], extra: String = "") -> String {
        #"{"team": "\#(team)", "overs": [{"over": 0, "deliveries": [\#(balls.joined(separator: ", "))]}]\#(extra)}"#
    }

    /// MI: 10/2 off 6 legal balls (a wide, a no-ball, leg-byes, a retirement, a bowled, a run out);
    /// CSK chase a stated D/L target of 8 in 5 overs and make 2.
    static let miVersusCsk = match(
        teams: ["Mumbai Indians", "Chennai Super Kings"],
        outcome: #"{"winner": "Mumbai Indians", "by": {"runs": 5}, "method": "D/L"}"#,
        innings: [
            innings("Mumbai Indians", [
                ball("A", "B", bat: 1),
                ball("B", "A", extras: ["wides": 1]),
                ball("B", "A", bat: 4, extras: ["noballs": 1]),
                ball("B", "A", extras: ["legbyes": 2]),
                ball("B", "A", wicket: ("B", "retired hurt", nil)),
                ball("A", "C", wicket: ("A", "bowled", nil)),
                ball("C", "D", bat: 1, wicket: ("D", "run out", "F Fielder")),
                ball("C", "E"),
            ]),
            innings("Chennai Super Kings", [ball("P", "Q", "Y Bowler", bat: 2), ball("P", "Q", "Y Bowler")],
                    extra: #", "target": {"runs": 8, "overs": 5}"#),
        ])

    static func cricket(_ response: MatchResponse) throws -> CricketScore {
        guard case .cricket(let score) = response.match.score else { throw InputError(field: "score", reason: "not cricket") }
        return score
    }

    @Test func ballByBallFigures() throws {
        let lines = try CricsheetImporter.recording(Self.miVersusCsk, id: "ipl-m1")
        #expect(ImportCheck.invariants(lines, id: "ipl-m1") == [])
        let responses = try ImportCheck.responses(lines)
        #expect(responses.count == 1 + 8 + 1 + 2)
        #expect(lines.map(\.t) == [0, 40, 80, 120, 160, 200, 240, 280, 320, 360, 1520, 1560])

        let first = responses[0].match
        #expect(first.status == .scheduled)
        #expect(first.home == Team(id: "mumbai-indians", name: "Mumbai Indians", short: "MI"))
        #expect(first.away == Team(id: "chennai-super-kings", name: "Chennai Super Kings", short: "CSK"))
        #expect(first.venue == "Wankhede Stadium, Mumbai")
        #expect(first.competition == "IPL")
        #expect(first.startsAt == JSON.parseDate("2026-04-21T10:00:00Z"))
        #expect(responses[0].retryAfterMs == 60_000)
        #expect(responses[1].retryAfterMs == 5_000)

        // After the wide: no legal ball, no ball faced.
        let wide = try Self.cricket(responses[2])
        #expect(wide.innings.first?.balls == 1)
        #expect(wide.innings.first?.runs == 2)
        #expect(wide.batters.first { $0.name == "B" }?.balls == 0)

        // After the last ball of the innings.
        let end = try Self.cricket(responses[8])
        #expect(end.innings == [CricketScore.Innings(team: "mumbai-indians", runs: 10, wickets: 2, balls: 6)])
        #expect(end.batters == [
            CricketScore.Batter(name: "C", runs: 1, balls: 2, onStrike: true),
            CricketScore.Batter(name: "E", runs: 0, balls: 0),
        ])
        #expect(end.bowler == CricketScore.Bowler(name: "X Bowler", balls: 6, runs: 8, wickets: 1))
        #expect(responses[8].match.events.map(\.text) == ["A b X Bowler 1 (2)", "D run out (F Fielder) 0 (0)"])
        #expect(responses[8].match.events.map(\.type) == ["wicket", "wicket"])

        // Retired hurt: B leaves the crease, the wicket count does not move.
        let retired = try Self.cricket(responses[5])
        #expect(retired.innings.first?.wickets == 0)
        #expect(retired.batters.map(\.name) == ["A"])
        #expect(try Self.cricket(responses[4]).batters.first { $0.name == "B" } == CricketScore.Batter(name: "B", runs: 4, balls: 2, onStrike: true))

        // The break, then the chase with its stated target and overs.
        #expect(responses[9].match.status == .break)
        #expect(responses[9].retryAfterMs == 30_000)
        #expect(try Self.cricket(responses[9]).batters.isEmpty)
        let chase = try Self.cricket(responses[10])
        #expect(chase.innings.last == CricketScore.Innings(team: "chennai-super-kings", runs: 2, wickets: 0, balls: 1, target: 8, oversLimit: 5))
        #expect(chase.bowler?.name == "Y Bowler")
        #expect(chase.method == nil && chase.winner == nil)

        let last = responses[11]
        #expect(last.match.status == .completed)
        let final = try Self.cricket(last)
        #expect(final.method == "D/L")
        #expect(final.winner == "mumbai-indians")
        #expect(try MatchRenderer.render(last.match).contentState.result == "MI won by 5 runs (D/L)")
    }

    @Test func sameInputSameBytes() throws {
        let once = try RecordingWriter.encode(try CricsheetImporter.recording(Self.miVersusCsk, id: "ipl-m1"))
        let again = try RecordingWriter.encode(try CricsheetImporter.recording(Self.miVersusCsk, id: "ipl-m1"))
        #expect(once == again)
        #expect(once.split(separator: UInt8(ascii: "\n")).count == 12)
    }

    @Test func superOverTargetsAndEliminator() throws {
        let data = Self.match(
            teams: ["Alpha", "Beta Gamma"], outcome: #"{"result": "tie", "eliminator": "Beta Gamma"}"#,
            innings: [
                Self.innings("Alpha", [Self.ball("A", "B", bat: 1)]),
                Self.innings("Beta Gamma", [Self.ball("P", "Q", bat: 1)]),
                Self.innings("Beta Gamma", [Self.ball("P", "Q", bat: 6)], extra: #", "super_over": true"#),
                Self.innings("Alpha", [Self.ball("A", "B", bat: 4)], extra: #", "super_over": true"#),
            ])
        let lines = try CricsheetImporter.recording(data, id: "so")
        #expect(ImportCheck.invariants(lines, id: "so") == [])
        let last = try #require(try ImportCheck.responses(lines).last)
        let score = try Self.cricket(last)
        #expect(score.innings.map(\.target) == [nil, 2, nil, 7])
        #expect(score.innings.map(\.superOver) == [false, false, true, true])
        #expect(score.winner == "beta-gamma")
        #expect(last.match.home.short == "ALP" && last.match.away.short == "BG")
        #expect(try MatchRenderer.render(last.match).contentState.result == "Match tied (BG won the super over)")
    }

    @Test func noResultIsAbandonedAfterAStoppage() throws {
        let data = Self.match(
            teams: ["Alpha", "Beta"], outcome: #"{"result": "no result"}"#,
            innings: [Self.innings("Alpha", [Self.ball("A", "B", bat: 1)])])
        let lines = try CricsheetImporter.recording(data, id: "nr")
        #expect(ImportCheck.invariants(lines, id: "nr") == [])
        let responses = try ImportCheck.responses(lines)
        #expect(responses.map(\.match.status) == [.scheduled, .live, .break, .abandoned])
        #expect(lines.map(\.t) == [0, 40, 80, 1880])
        #expect(try MatchRenderer.render(responses[3].match).contentState.result == "No result")
    }

    @Test func formatsAndErrors() throws {
        let odi = Self.match(teams: ["A", "B"], outcome: "{}", innings: [Self.innings("A", [Self.ball("A", "B")])], type: "ODM")
        let lines = try CricsheetImporter.recording(odi, id: "x")
        let score = try Self.cricket(try #require(try ImportCheck.responses(lines).last))
        #expect(score.format == .odi)
        #expect(score.oversLimit == 20)

        let hundred = Self.match(teams: ["A", "B"], outcome: "{}", innings: [], type: "The Hundred")
        #expect(throws: InputError(field: "info.match_type", reason: "unsupported match type 'The Hundred'")) {
            try CricsheetImporter.recording(hundred, id: "x")
        }
        let stranger = Self.match(teams: ["A", "B"], outcome: "{}", innings: [Self.innings("C", [Self.ball("A", "B")])])
        #expect(throws: InputError(field: "innings[0].team", reason: "'C' is not one of info.teams")) {
            try CricsheetImporter.recording(stranger, id: "x")
        }
        let broken = Data(#"{"info": {"teams": ["A", "B"], "match_type": "T20"}, "innings": [{"team": "A", "overs": [{"deliveries": [{"batter": "A"}]}]}]}"#.utf8)
        #expect(throws: InputError.self) { try CricsheetImporter.recording(broken, id: "x") }
    }

    @Test func teamNaming() {
        #expect(TeamNaming.short("Mumbai Indians") == "MI")
        #expect(TeamNaming.short("New Zealand") == "NZ")
        #expect(TeamNaming.short("England") == "ENG")
        #expect(TeamNaming.short("Royal Challengers Bangalore") == "RCB")
        #expect(TeamNaming.slug("Royal Challengers Bangalore") == "royal-challengers-bangalore")
        #expect(TeamNaming.slug("St. Lucia Zouks") == "st-lucia-zouks")
        #expect(CricsheetImporter.matchId(forFile: URL(fileURLWithPath: "/d/1144530.json")) == "1144530")
    }
}
