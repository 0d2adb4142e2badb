import Foundation
import Testing
@testable import MatchcastCore

// Reading the score feed (docs/formats.md, "Feed (native v1)"): the example decodes, every error names its field, and one
// bad match never costs the others.

enum FeedFixture {
    /// The MatchSnapshot of docs/formats.md, "Feed (native v1)", with the cricket `score` of the same section.
    static let contractExample = #"""
    {
      "id": "ipl-2026-m41",
      "sport": "cricket",
      "status": "live",
      "startsAt": "2026-04-21T14:00:00Z",
      "updatedAt": "2026-04-21T15:12:09Z",
      "seq": 412,
      "competition": "IPL 2026",
      "venue": "Wankhede Stadium, Mumbai",
      "home": {"id": "mi", "name": "Mumbai Indians", "short": "MI"},
      "away": {"id": "csk", "name": "Chennai Super Kings", "short": "CSK"},
      "score": {"format": "t20", "oversLimit": 20, "innings": [{"team": "mi", "runs": 87, "wickets": 6, "balls": 86, "target": 165}], "batters": [{"name": "Rohit Sharma", "runs": 45, "balls": 32, "onStrike": true}], "bowler": {"name": "Jasprit Bumrah", "balls": 20, "runs": 18, "wickets": 2}},
      "events": [{"id": "e-981", "type": "wicket", "at": "2026-04-21T15:12:01Z", "text": "Dhoni c Rohit b Bumrah 12 (9)"}]
    }
    """#

    static func football(_ id: String, home: Int = 2) -> String {
        #"{"id":"\#(id)","sport":"football","status":"live","home":{"id":"mun","name":"Manchester United","short":"MUN"},"away":{"id":"liv","name":"Liverpool"},"score":{"home":\#(home),"away":1,"period":"2H","clock":"67'"}}"#
    }

    /// The contract example with one textual replacement.
    static func example(replacing old: String, with new: String) -> Data {
        precondition(contractExample.contains(old), "fixture does not contain \(old)")
        return Data(contractExample.replacingOccurrences(of: old, with: new).utf8)
    }

    static func decodeError(_ data: Data) -> InputError? {
        do {
            _ = try JSON.decode(MatchSnapshot.self, from: data)
            return nil
        } catch {
            return error
        }
    }

    static func date(_ text: String) -> Date {
        // ISO 8601 in UTC, built from components so no parser under test is involved.
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        let p = text.split(whereSeparator: { "-T:Z".contains($0) }).map { Int($0)! }
        return calendar.date(from: DateComponents(year: p[0], month: p[1], day: p[2], hour: p[3], minute: p[4], second: p[5]))!
    }
}

@Suite("Snapshot decoding")
struct SnapshotDecodingTests {
    fileprivate typealias F = FeedFixture

    @Test func contractExampleDecodes() throws {
        let snapshot = try JSON.decode(MatchSnapshot.self, from: Data(F.contractExample.utf8))
        #expect(snapshot.id == "ipl-2026-m41")
        #expect(snapshot.sport == .cricket)
        #expect(snapshot.status == .live)
        #expect(snapshot.startsAt == F.date("2026-04-21T14:00:00Z"))
        #expect(snapshot.updatedAt == F.date("2026-04-21T15:12:09Z"))
        #expect(snapshot.seq == 412)
        #expect(snapshot.competition == "IPL 2026")
        #expect(snapshot.venue == "Wankhede Stadium, Mumbai")
        #expect(snapshot.home == Team(id: "mi", name: "Mumbai Indians", short: "MI"))
        #expect(snapshot.away.short == "CSK")
        guard case .cricket(let score) = snapshot.score else {
            Issue.record("expected a cricket score, got \(snapshot.score)")
            return
        }
        #expect(score.format == .t20)
        #expect(score.oversLimit == 20)
        #expect(score.innings == [.init(team: "mi", runs: 87, wickets: 6, balls: 86, target: 165)])
        #expect(score.batters == [.init(name: "Rohit Sharma", runs: 45, balls: 32, onStrike: true)])
        #expect(score.bowler == .init(name: "Jasprit Bumrah", balls: 20, runs: 18, wickets: 2))
        #expect(snapshot.events == [MatchEvent(id: "e-981", type: "wicket", at: F.date("2026-04-21T15:12:01Z"), text: "Dhoni c Rohit b Bumrah 12 (9)")])
        // And it renders as the contract's strings.
        let state = try MatchRenderer.render(snapshot).contentState
        #expect(state.home.score == "87/6 (14.2)")
        #expect(state.runRate == "RR 6.07")
    }

    @Test func snapshotSurvivesAnEncodeDecodeRoundTrip() throws {
        let snapshot = try JSON.decode(MatchSnapshot.self, from: Data(F.contractExample.utf8))
        let again = try JSON.decode(MatchSnapshot.self, from: try JSON.encoder().encode(snapshot))
        #expect(again == snapshot)
    }

    @Test func otherSportsDecode() throws {
        let football = try JSON.decode(MatchSnapshot.self, from: Data(F.football("f1").utf8))
        #expect(football.score == .teamTotals(TeamScore(home: 2, away: 1, period: "2H", clock: "67'")))
        #expect(football.away.short == "LIV")  // defaulted from the name
        let tennis = #"{"id":"t","sport":"tennis","status":"live","home":{"id":"a","name":"A"},"away":{"id":"b","name":"B"},"score":{"bestOf":5,"firstServer":"away","finalSetTiebreak":10,"points":"HHAH"}}"#
        let t = try JSON.decode(MatchSnapshot.self, from: Data(tennis.utf8))
        #expect(t.score == .tennis(TennisScore(rules: TennisRules(bestOf: 5, firstServer: .away, finalSetTiebreak: 10), points: "HHAH")))
        let baseball = #"{"id":"b","sport":"baseball","status":"live","home":{"id":"a","name":"A"},"away":{"id":"b","name":"B"},"score":{"home":3,"away":2,"inning":7,"half":"top","outs":1,"bases":[true,false,false]}}"#
        let b = try JSON.decode(MatchSnapshot.self, from: Data(baseball.utf8))
        #expect(b.score == .baseball(BaseballScore(home: 3, away: 2, inning: 7, half: .top, outs: 1, bases: [true, false, false])))
        let noScore = #"{"id":"s","sport":"hockey","status":"scheduled","home":{"id":"a","name":"A"},"away":{"id":"b","name":"B"}}"#
        #expect(try JSON.decode(MatchSnapshot.self, from: Data(noScore.utf8)).score == .teamTotals(TeamScore(home: 0, away: 0)))
    }

    // MARK: Errors name the field

    @Test func unknownSportNamesSport() throws {
        let error = try #require(F.decodeError(F.example(replacing: #""sport": "cricket""#, with: #""sport": "rugby""#)))
        #expect(error.field == "sport")
        #expect(error.description.hasPrefix("field 'sport': "))
        #expect(error.reason.contains("rugby"))
    }

    @Test func wrongTypeNamesTheNestedField() throws {
        let error = try #require(F.decodeError(F.example(replacing: #""runs": 87"#, with: #""runs": "87""#)))
        #expect(error.field == "score.innings[0].runs")
        #expect(error.reason == "expected a number")
    }

    @Test func negativeRunsAreOutOfRange() throws {
        let error = try #require(F.decodeError(F.example(replacing: #""runs": 87"#, with: #""runs": -3"#)))
        #expect(error.field == "score.innings[0].runs")
        #expect(error.description == "field 'score.innings[0].runs': must be in 0...1000000, got -3")
    }

    @Test func missingHomeIsNamed() throws {
        let error = try #require(F.decodeError(F.example(
            replacing: #""home": {"id": "mi", "name": "Mumbai Indians", "short": "MI"},"#, with: "")))
        #expect(error.field == "home")
        #expect(error.reason == "missing")
    }

    @Test func badDateIsNamed() throws {
        let error = try #require(F.decodeError(F.example(replacing: "2026-04-21T14:00:00Z", with: "21/04/2026 14:00")))
        #expect(error.field == "startsAt")
        #expect(error.reason.contains("ISO 8601"))
    }

    @Test(arguments: [
        (#""wickets": 6"#, #""wickets": 11"#, "score.innings[0].wickets"),
        (#""name": "Rohit Sharma""#, #""name": "  ""#, "score.batters[0].name"),
        (#""status": "live""#, #""status": "paused""#, "status"),
        (#""format": "t20""#, #""format": "t10""#, "score.format"),
        (#""oversLimit": 20"#, #""oversLimit": 0"#, "score.oversLimit"),
        (#""id": "ipl-2026-m41""#, #""id": """#, "id"),
        (#""short": "CSK"}"#, #""short": 5}"#, "away.short"),
        (#""text": "Dhoni c Rohit b Bumrah 12 (9)""#, #""text": null"#, "events[0].text"),
        (#""balls": 20, "runs": 18"#, #""balls": true, "runs": 18"#, "score.bowler.balls"),
    ])
    func everyErrorNamesItsField(old: String, new: String, field: String) throws {
        let error = try #require(F.decodeError(F.example(replacing: old, with: new)))
        #expect(error.field == field, "\(error)")
    }

    @Test func otherSportsNameTheirFields() throws {
        let points = #"{"id":"t","sport":"tennis","status":"live","home":{"id":"a","name":"A"},"away":{"id":"b","name":"B"},"score":{"points":"HHXA"}}"#
        #expect(F.decodeError(Data(points.utf8))?.field == "score.points")
        let bestOf = #"{"id":"t","sport":"tennis","status":"live","home":{"id":"a","name":"A"},"away":{"id":"b","name":"B"},"score":{"bestOf":4}}"#
        #expect(F.decodeError(Data(bestOf.utf8))?.field == "score.bestOf")
        let bases = #"{"id":"b","sport":"baseball","status":"live","home":{"id":"a","name":"A"},"away":{"id":"b","name":"B"},"score":{"home":0,"away":0,"inning":1,"half":"top","outs":0,"bases":[true]}}"#
        #expect(F.decodeError(Data(bases.utf8))?.field == "score.bases")
        let outs = bases.replacingOccurrences(of: #""outs":0,"bases":[true]"#, with: #""outs":4"#)
        #expect(F.decodeError(Data(outs.utf8))?.field == "score.outs")
        let goals = F.football("f").replacingOccurrences(of: #""home":2"#, with: #""home":-1"#)
        #expect(F.decodeError(Data(goals.utf8))?.field == "score.home")
    }

    @Test func notJSONIsAnErrorWithoutAField() throws {
        let error = try #require(F.decodeError(Data("{\"id\": ".utf8)))
        #expect(error.field == "")
        #expect(error.description == error.reason)
    }

    // MARK: Feed responses

    @Test func oneBadMatchInALiveListKeepsTheOthers() throws {
        let bad = F.football("bad-1").replacingOccurrences(of: #""home":2"#, with: #""home":-1"#)
        let body = #"{"retryAfterMs": 5000, "generatedAt": "2026-04-21T15:12:09Z", "matches": [\#(F.football("ok-0")), \#(bad), \#(F.football("ok-2", home: 3))]}"#
        let response = try FeedDecoding.liveMatches(Data(body.utf8))
        #expect(response.retryAfterMs == 5000)
        #expect(response.generatedAt == F.date("2026-04-21T15:12:09Z"))
        #expect(response.matches.map(\.id) == ["ok-0", "ok-2"])
        #expect(response.failures.count == 1)
        let failure = try #require(response.failures.first)
        #expect(failure.matchId == "bad-1")
        #expect(failure.error.field == "matches[1].score.home")
        #expect(failure.description.hasPrefix("match bad-1: field 'matches[1].score.home': "))
    }

    @Test func unreadableMatchWithoutAnIdIsStillReported() throws {
        let body = #"{"matches": [42, {"sport": "football"}, \#(F.football("ok"))]}"#
        let response = try FeedDecoding.liveMatches(Data(body.utf8))
        #expect(response.matches.map(\.id) == ["ok"])
        #expect(response.failures.map(\.matchId) == [nil, nil])
        #expect(response.failures.map(\.error.field).allSatisfy { $0.hasPrefix("matches[") })
        #expect(response.failures.last?.error.field == "matches[1].id")
    }

    @Test func wrongEnvelopeRejectsTheBody() {
        #expect(throws: InputError.self) { try FeedDecoding.liveMatches(Data(#"{"matches": {}}"#.utf8)) }
        #expect(throws: InputError.self) { try FeedDecoding.liveMatches(Data(#"{"retryAfterMs": 5}"#.utf8)) }
        #expect(throws: InputError.self) { try FeedDecoding.match(Data(#"{"match": 5}"#.utf8)) }
    }

    @Test func matchAndScheduleResponses() throws {
        let match = try FeedDecoding.match(Data(#"{"retryAfterMs": 2500, "match": \#(F.football("m"))}"#.utf8))
        #expect(match.retryAfterMs == 2500)
        #expect(match.match.id == "m")
        let bad = F.football("late").replacingOccurrences(of: #""sport":"football""#, with: #""sport":"curling""#)
        let schedule = try FeedDecoding.schedule(Data(#"{"date": "2026-04-21", "matches": [\#(bad), \#(F.football("s"))]}"#.utf8))
        #expect(schedule.date == "2026-04-21")
        #expect(schedule.matches.map(\.id) == ["s"])
        #expect(schedule.failures.map(\.error.field) == ["matches[0].sport"])
        #expect(schedule.failures.map(\.matchId) == ["late"])
    }

    @Test func anySnapshotsAcceptsAllThreeShapes() throws {
        let bare = try FeedDecoding.anySnapshots(Data(F.football("bare").utf8))
        #expect(bare.matches.map(\.id) == ["bare"])
        #expect(bare.failures.isEmpty)
        let single = try FeedDecoding.anySnapshots(Data(#"{"retryAfterMs": 1, "match": \#(F.football("one"))}"#.utf8))
        #expect(single.matches.map(\.id) == ["one"])
        let bad = F.football("x").replacingOccurrences(of: #""status":"live""#, with: #""status":"?""#)
        let list = try FeedDecoding.anySnapshots(Data(#"{"matches": [\#(F.football("a")), \#(bad)]}"#.utf8))
        #expect(list.matches.map(\.id) == ["a"])
        #expect(list.failures.map(\.error.field) == ["matches[1].status"])
        let contract = try FeedDecoding.anySnapshots(Data(F.contractExample.utf8))
        #expect(contract.matches.map(\.id) == ["ipl-2026-m41"])
    }

    @Test func anySnapshotsRejectsWhatIsNotAnObject() throws {
        let notJSON = #expect(throws: InputError.self) { try FeedDecoding.anySnapshots(Data("nope".utf8)) }
        #expect(notJSON?.reason == "not valid JSON")
        let array = #expect(throws: InputError.self) { try FeedDecoding.anySnapshots(Data("[1]".utf8)) }
        #expect(array?.reason == "expected a JSON object")
        let broken = #expect(throws: InputError.self) {
            try FeedDecoding.anySnapshots(Data(F.example(replacing: #""runs": 87"#, with: #""runs": -1"#)))
        }
        #expect(broken?.field == "score.innings[0].runs")
    }
}
