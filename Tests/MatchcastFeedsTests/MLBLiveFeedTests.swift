import Foundation
import MatchcastCore
import Testing

@testable import MatchcastFeeds

/// `MLBLiveFeed` against a real recorded game (when `MATCHCAST_REALDATA` is set) and small
/// bodies written here.
@Suite("MLBLiveFeed")
struct MLBLiveFeedTests {
    /// `$MATCHCAST_REALDATA/mlb/livefeed_744914.json`: HOU 3 @ TOR 1, 2024-07-01. Read in place, never copied.
    static let realFile: URL? = ProcessInfo.processInfo.environment["MATCHCAST_REALDATA"].map {
        URL(fileURLWithPath: $0).appendingPathComponent("mlb/livefeed_744914.json")
    }

    static var hasRealFile: Bool {
        realFile.map { FileManager.default.fileExists(atPath: $0.path) } ?? false
    }

    /// A live game: top of the 7th, 1 out, a runner on first, away 2 home 3.
    static let liveGame = """
        {
          "gamePk": 123456,
          "metaData": {"wait": 10, "timeStamp": "20250412_230512"},
          "gameData": {
            "game": {"pk": 123456},
            "datetime": {"dateTime": "2025-04-12T20:10:00Z"},
            "status": {"abstractGameState": "Live", "detailedState": "In Progress"},
            "teams": {
              "away": {"id": 147, "name": "New York Yankees", "abbreviation": "NYY"},
              "home": {"id": 111, "name": "Boston Red Sox", "abbreviation": "BOS"}
            },
            "venue": {"name": "Fenway Park"}
          },
          "liveData": {
            "linescore": {
              "currentInning": 7, "inningHalf": "Top", "isTopInning": true, "outs": 1,
              "teams": {"home": {"runs": 3, "hits": 6}, "away": {"runs": 2, "hits": 5}},
              "offense": {"first": {"id": 592450, "fullName": "Aaron Judge"}, "batter": {"id": 1}}
            },
            "plays": {
              "allPlays": [
                {"atBatIndex": 0, "result": {"description": "Jarren Duran grounds out."}, "about": {"atBatIndex": 0, "endTime": "2025-04-12T20:14:00.000Z"}, "playEvents": [{}, {}]},
                {"atBatIndex": 1, "result": {"description": "Rafael Devers homers (3) on a fly ball to right field."}, "about": {"atBatIndex": 1, "endTime": "2025-04-12T20:20:30.500Z"}, "playEvents": [{}]},
                {"atBatIndex": 2, "result": {"description": "Aaron Judge singles on a line drive to left field. Juan Soto scores."}, "about": {"atBatIndex": 2, "endTime": "2025-04-12T21:40:10Z"}, "playEvents": [{}, {}, {}]},
                {"atBatIndex": 3, "result": {}, "about": {"atBatIndex": 3}, "playEvents": [{}, {}]}
              ],
              "scoringPlays": [1, 2]
            }
          }
        }
        """

    // MARK: Real recorded game

    @Test(.enabled(if: hasRealFile, "set MATCHCAST_REALDATA to the shared realdata folder"))
    func realGameConvertsToTheFinalLinescore() throws {
        let data = try Data(contentsOf: try #require(Self.realFile))
        let (snapshot, wait) = try MLBLiveFeed.snapshot(from: data)
        #expect(snapshot.id == "744914")
        #expect(snapshot.sport == .baseball)
        #expect(snapshot.status == .completed)
        #expect(wait == 10)
        // Houston visited Toronto: TOR is home.
        #expect(snapshot.home == Team(id: "141", name: "Toronto Blue Jays", short: "TOR"))
        #expect(snapshot.away == Team(id: "117", name: "Houston Astros", short: "HOU"))
        guard case .baseball(let score) = snapshot.score else {
            Issue.record("expected a baseball score")
            return
        }
        #expect(score.home == 1)
        #expect(score.away == 3)
        #expect(score.inning == 9)
        #expect(score.half == .bottom)
        #expect(score.outs == 3)
        #expect(snapshot.startsAt == JSON.parseDate("2024-07-01T19:07:00Z"))
        #expect(snapshot.updatedAt == JSON.parseDate("2024-07-01T21:44:04Z"))

        // Three home runs scored every run.
        #expect(snapshot.events.map(\.id) == ["play-29", "play-61", "play-66"])
        #expect(snapshot.events.allSatisfy { $0.type == "run" && $0.text.contains("homers") })
        let times = snapshot.events.compactMap(\.at)
        #expect(times.count == 3)
        #expect(zip(times, times.dropFirst()).allSatisfy { $0 < $1 })
        #expect(times.allSatisfy { $0 > snapshot.startsAt! && $0 <= snapshot.updatedAt! })
        #expect(snapshot.seq.map { $0 >= 6_800 } == true)

        // The native body it becomes reads back through the broker's decoder.
        let encoded = try JSON.encoder().encode(snapshot)
        #expect(try JSON.decode(MatchSnapshot.self, from: encoded) == snapshot)
    }

    // MARK: Synthetic bodies

    @Test func liveGameInTheTopOfTheSeventh() throws {
        let (snapshot, wait) = try MLBLiveFeed.snapshot(from: Data(Self.liveGame.utf8))
        #expect(wait == 10)
        #expect(snapshot.id == "123456")
        #expect(snapshot.status == .live)
        #expect(snapshot.venue == "Fenway Park")
        #expect(snapshot.home.short == "BOS")
        #expect(snapshot.away.short == "NYY")
        #expect(snapshot.score == .baseball(BaseballScore(home: 3, away: 2, inning: 7, half: .top, outs: 1, bases: [true, false, false])))
        #expect(snapshot.updatedAt == JSON.parseDate("2025-04-12T23:05:12Z"))
        #expect(snapshot.seq == 4 * 100 + 2)
        #expect(snapshot.events.map(\.id) == ["play-1", "play-2"])
        #expect(snapshot.events.last?.text == "Aaron Judge singles on a line drive to left field. Juan Soto scores.")
        // Whole seconds, as the native body carries them.
        #expect(snapshot.events.first?.at == JSON.parseDate("2025-04-12T20:20:30Z"))
    }

    @Test(arguments: [
        ("Preview", "Scheduled", MatchStatus.scheduled),
        ("Preview", "Delayed Start: Rain", .scheduled),
        ("Live", "In Progress", .live),
        ("Live", "Delayed: Rain", .break),
        ("Final", "Final", .completed),
        ("Final", "Game Over", .completed),
        ("Final", "Postponed", .postponed),
        ("Live", "Suspended: Rain", .postponed),
        ("Final", "Cancelled", .abandoned),
    ])
    func statusMapping(_ abstract: String, _ detailed: String, _ expected: MatchStatus) throws {
        let body = Self.liveGame.replacingOccurrences(
            of: #""abstractGameState": "Live", "detailedState": "In Progress""#,
            with: #""abstractGameState": "\#(abstract)", "detailedState": "\#(detailed)""#)
        #expect(try MLBLiveFeed.snapshot(from: Data(body.utf8)).snapshot.status == expected)
    }

    @Test func previewWithoutLinescoreStartsAtZero() throws {
        let body = """
            {"gamePk": 9, "gameData": {"status": {"abstractGameState": "Preview"},
             "teams": {"home": {"id": 1, "name": "Home"}, "away": {"id": 2, "name": "Away"}}},
             "liveData": {"linescore": {"teams": {"home": {}, "away": {}}}, "plays": {"allPlays": [], "scoringPlays": []}}}
            """
        let (snapshot, wait) = try MLBLiveFeed.snapshot(from: Data(body.utf8))
        #expect(wait == nil)
        #expect(snapshot.status == .scheduled)
        #expect(snapshot.home.short == "HOM")
        #expect(snapshot.score == .baseball(BaseballScore(home: 0, away: 0, inning: 1, half: .top, outs: 0, bases: [false, false, false])))
        #expect(snapshot.events.isEmpty)
        #expect(snapshot.updatedAt == nil)
    }

    @Test(arguments: [
        (#""runs": 3, "hits": 6"#, #""runs": "three""#, "liveData.linescore.teams.home.runs"),
        (#""abstractGameState": "Live""#, #""abstractGameState": "Warmup""#, "gameData.status.abstractGameState"),
        (#""20250412_230512""#, #""2025-04-12 23:05""#, "metaData.timeStamp"),
        (#""scoringPlays": [1, 2]"#, #""scoringPlays": [1, 7]"#, "liveData.plays.scoringPlays[1]"),
        (#""outs": 1"#, #""outs": 4"#, "liveData.linescore.outs"),
        (#""name": "Boston Red Sox""#, #""name": 5"#, "gameData.teams.home.name"),
        (#""name": "New York Yankees", "#, "", "gameData.teams.away.name"),
        (#""dateTime": "2025-04-12T20:10:00Z""#, #""dateTime": "soon""#, "gameData.datetime.dateTime"),
    ])
    func malformedBodiesNameTheField(_ original: String, _ replacement: String, _ field: String) throws {
        let body = Self.liveGame.replacingOccurrences(of: original, with: replacement)
        #expect(body != Self.liveGame)
        #expect {
            _ = try MLBLiveFeed.snapshot(from: Data(body.utf8))
        } throws: { error in
            (error as? InputError)?.field == field
        }
    }

    @Test func notJSONIsAnInputError() {
        #expect(throws: InputError.self) { _ = try MLBLiveFeed.snapshot(from: Data("<html>".utf8)) }
    }

    @Test func missingGamePkIsNamed() {
        let body = Self.liveGame
            .replacingOccurrences(of: #""gamePk": 123456,"#, with: "")
            .replacingOccurrences(of: #""game": {"pk": 123456},"#, with: "")
        #expect {
            _ = try MLBLiveFeed.snapshot(from: Data(body.utf8))
        } throws: { error in
            (error as? InputError)?.field == "gamePk"
        }
    }
}
