import Foundation
@testable import MatchcastCLI
import MatchcastCore
import Testing

@Suite("matchcast render (docs/formats.md, content-state)")
struct RenderCommandTests {
    private static let cricket = """
        {"retryAfterMs": 5000, "match": {"id": "ipl-2026-m41", "sport": "cricket", "status": "live",
         "home": {"id": "csk", "name": "Chennai Super Kings", "short": "CSK"},
         "away": {"id": "mi", "name": "Mumbai Indians", "short": "MI"},
         "score": {"format": "t20", "oversLimit": 20,
           "innings": [{"team": "csk", "runs": 164, "wickets": 7, "balls": 120},
                       {"team": "mi", "runs": 87, "wickets": 6, "balls": 86, "target": 165}],
           "batters": [{"name": "Rohit Sharma", "runs": 45, "balls": 32, "onStrike": true}],
           "bowler": {"name": "Jasprit Bumrah", "balls": 20, "runs": 18, "wickets": 2}}}}
        """

    @Test("a feed response renders one line with contentState and derived")
    func cricketLine() throws {
        let lines = try RenderCommand.render(Data(Self.cricket.utf8))
        #expect(lines.count == 1)
        let object = try #require(JSONSerialization.jsonObject(with: Data(lines[0].utf8)) as? [String: Any])
        #expect(object["matchId"] as? String == "ipl-2026-m41")
        let state = try #require(object["contentState"] as? [String: Any])
        #expect((state["away"] as? [String: String])?["score"] == "87/6 (14.2)")
        #expect(state["runRate"] as? String == "RR 6.07")
        #expect(state["equation"] as? String == "Need 78 off 34")
        let derived = try #require(object["derived"] as? [String: Any])
        #expect(derived["target"] as? Int == 165)
        #expect((derived["need"] as? [String: Int]) == ["runs": 78, "balls": 34])
        #expect(derived["result"] is NSNull)
    }

    @Test("a list renders every match; a bare snapshot renders too")
    func listAndBare() throws {
        let list = """
            {"retryAfterMs": 1000, "matches": [
              {"id": "f1", "sport": "football", "status": "live", "home": {"id": "a", "name": "Arsenal", "short": "ARS"},
               "away": {"id": "c", "name": "Chelsea", "short": "CHE"}, "score": {"home": 2, "away": 1, "period": "2H", "clock": "67'"}},
              {"id": "t1", "sport": "tennis", "status": "live", "home": {"id": "a", "name": "A"}, "away": {"id": "b", "name": "B"},
               "score": {"bestOf": 3, "firstServer": "home", "finalSetTiebreak": 7, "points": "HHHH"}}]}
            """
        let lines = try RenderCommand.render(Data(list.utf8))
        #expect(lines.count == 2)
        #expect(lines[0].contains(#""summary":"ARS 2-1 CHE · 2H 67'""#))
        #expect(lines[1].contains(#""sets":[[1,0]]"#))
        let bare = try RenderCommand.render(Data(#"{"id": "x", "sport": "hockey", "status": "scheduled", "home": {"id": "a", "name": "A"}, "away": {"id": "b", "name": "B"}}"#.utf8))
        #expect(bare.count == 1)
    }

    @Test("malformed input names the field", arguments: [
        (#"{"id": "x", "sport": "rugby", "status": "live", "home": {"id": "a", "name": "A"}, "away": {"id": "b", "name": "B"}}"#, "sport"),
        (#"{"match": {"id": "x", "sport": "football", "status": "live", "home": {"id": "a", "name": "A"}, "away": {"id": "b", "name": "B"}, "score": {"home": "two", "away": 1}}}"#, "match.score.home"),
        (#"{"matches": [{"id": "x", "sport": "baseball", "status": "live", "home": {"id": "a", "name": "A"}, "away": {"id": "b", "name": "B"}, "score": {"home": 1, "away": 0, "inning": 3, "half": "top", "outs": 4}}]}"#, "matches[0].score.outs"),
        ("not json", ""),
    ])
    func malformed(input: String, field: String) throws {
        let error = try #require(throws: InputError.self) { try RenderCommand.render(Data(input.utf8)) }
        #expect(error.field == field)
        #expect(!error.description.contains("\n"))
    }
}
