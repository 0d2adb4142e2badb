import Foundation
import MatchcastCore
import Testing

@testable import MatchcastFeeds

/// `NHLWebFeed` and `NHLStatsAPIFeed` on small hand-written documents in the public api-web shape.
@Suite("NHLWebFeed")
struct NHLWebFeedTests {
    /// A play-by-play document: Florida at Tampa Bay, with two goals unless `plays` says otherwise.
    static func playByPlay(
        id: Int = 2024030121, state: String = "LIVE", scheduleState: String = "OK", period: Int = 2, periodType: String = "REG",
        timeRemaining: String = "09:03", secondsRemaining: Int = 543, intermission: Bool = false,
        home: Int = 0, away: Int = 2, plays: String? = nil
    ) -> String {
        let goals = plays ?? """
            {"eventId": 100, "sortOrder": 70, "typeDescKey": "goal", "timeInPeriod": "03:44",
             "periodDescriptor": {"number": 1, "periodType": "REG", "maxRegulationPeriods": 3},
             "details": {"scoringPlayerId": 8477935, "scoringPlayerTotal": 1, "eventOwnerTeamId": 13, "homeScore": 0, "awayScore": 1}},
            {"eventId": 5, "sortOrder": 3, "typeDescKey": "faceoff", "timeInPeriod": "00:00",
             "periodDescriptor": {"number": 1, "periodType": "REG"}},
            {"eventId": 300, "sortOrder": 210, "typeDescKey": "goal", "timeInPeriod": "05:10",
             "periodDescriptor": {"number": 2, "periodType": "REG", "maxRegulationPeriods": 3},
             "details": {"scoringPlayerId": 999, "eventOwnerTeamId": 13, "homeScore": 0, "awayScore": 2}}
            """
        return """
            {"id": \(id), "season": 20242025, "gameDate": "2025-04-22", "startTimeUTC": "2025-04-23T00:30:00Z",
             "venue": {"default": "Amalie Arena"}, "gameState": "\(state)", "gameScheduleState": "\(scheduleState)",
             "periodDescriptor": {"number": \(period), "periodType": "\(periodType)", "maxRegulationPeriods": 3},
             "awayTeam": {"id": 13, "abbrev": "FLA", "score": \(away), "commonName": {"default": "Panthers"}, "placeName": {"default": "Florida"}},
             "homeTeam": {"id": 14, "abbrev": "TBL", "score": \(home), "commonName": {"default": "Lightning"}, "placeName": {"default": "Tampa Bay"}},
             "clock": {"timeRemaining": "\(timeRemaining)", "secondsRemaining": \(secondsRemaining), "running": true, "inIntermission": \(intermission)},
             "plays": [\(goals)],
             "rosterSpots": [{"teamId": 13, "playerId": 8477935, "firstName": {"default": "Sam"}, "lastName": {"default": "Bennett"}}],
             "someFutureField": {"nested": [1, 2, 3]}}
            """
    }

    /// A `/v1/score/{date}` list: one game of each kind the live list must tell apart.
    static let scoreList = """
        {"prevDate": "2025-04-21", "currentDate": "2025-04-22", "nextDate": "2025-04-23",
         "games": [
          {"id": 2024030121, "gameDate": "2025-04-22", "startTimeUTC": "2025-04-23T00:30:00Z", "gameState": "LIVE", "gameScheduleState": "OK",
           "homeTeam": {"id": 14, "abbrev": "TBL", "name": {"default": "Lightning"}, "score": 0},
           "awayTeam": {"id": 13, "abbrev": "FLA", "name": {"default": "Panthers"}, "score": 2},
           "period": 2, "periodDescriptor": {"number": 2, "periodType": "REG", "maxRegulationPeriods": 3},
           "clock": {"timeRemaining": "09:03", "secondsRemaining": 543, "running": true, "inIntermission": false}},
          {"id": 2024030131, "gameDate": "2025-04-22", "startTimeUTC": "2025-04-22T23:00:00Z", "gameState": "CRIT", "gameScheduleState": "OK",
           "homeTeam": {"id": 6, "abbrev": "BOS", "name": {"default": "Bruins"}, "score": 3},
           "awayTeam": {"id": 10, "abbrev": "TOR", "name": {"default": "Maple Leafs"}, "score": 3},
           "period": 4, "periodDescriptor": {"number": 4, "periodType": "OT", "maxRegulationPeriods": 3},
           "clock": {"timeRemaining": "00:00", "secondsRemaining": 0, "running": false, "inIntermission": true}},
          {"id": 2024030141, "gameDate": "2025-04-22", "startTimeUTC": "2025-04-22T20:00:00Z", "gameState": "FINAL", "gameScheduleState": "OK",
           "homeTeam": {"id": 12, "abbrev": "CAR", "name": {"default": "Hurricanes"}, "score": 4},
           "awayTeam": {"id": 1, "abbrev": "NJD", "name": {"default": "Devils"}, "score": 3},
           "period": 5, "periodDescriptor": {"number": 5, "periodType": "SO", "maxRegulationPeriods": 3}},
          {"id": 2024030151, "gameDate": "2025-04-22", "startTimeUTC": "2025-04-22T17:00:00Z", "gameState": "OFF", "gameScheduleState": "OK",
           "homeTeam": {"id": 25, "abbrev": "DAL", "name": {"default": "Stars"}, "score": 1},
           "awayTeam": {"id": 21, "abbrev": "COL", "name": {"default": "Avalanche"}, "score": 5},
           "period": 3, "periodDescriptor": {"number": 3, "periodType": "REG", "maxRegulationPeriods": 3}},
          {"id": 2024030161, "gameDate": "2025-04-22", "startTimeUTC": "2025-04-23T02:00:00Z", "gameState": "FUT", "gameScheduleState": "OK",
           "homeTeam": {"id": 22, "abbrev": "EDM", "name": {"default": "Oilers"}},
           "awayTeam": {"id": 26, "abbrev": "LAK", "name": {"default": "Kings"}},
           "periodDescriptor": {"number": 0}},
          {"id": 2024030171, "gameDate": "2025-04-22", "startTimeUTC": "2025-04-23T02:00:00Z", "gameState": "FUT", "gameScheduleState": "PPD",
           "homeTeam": {"id": 52, "abbrev": "WPG", "name": {"default": "Jets"}},
           "awayTeam": {"id": 19, "abbrev": "STL", "name": {"default": "Blues"}}}
         ]}
        """

    private static func snapshot(_ json: String) throws -> MatchSnapshot {
        try NHLWebFeed.snapshot(fromPlayByPlay: Data(json.utf8))
    }

    @Test func liveGameConverts() throws {
        let snapshot = try Self.snapshot(Self.playByPlay())
        #expect(snapshot.id == "nhl:2024030121")
        #expect(snapshot.sport == .hockey)
        #expect(snapshot.status == .live)
        #expect(snapshot.competition == "NHL")
        #expect(snapshot.venue == "Amalie Arena")
        #expect(snapshot.startsAt == JSON.parseDate("2025-04-23T00:30:00Z"))
        #expect(snapshot.home == Team(id: "14", name: "Tampa Bay Lightning", short: "TBL"))
        #expect(snapshot.away == Team(id: "13", name: "Florida Panthers", short: "FLA"))
        #expect(snapshot.score == .teamTotals(TeamScore(home: 0, away: 2, period: "P2", clock: "09:03")))
        // Goals only, ordered by sortOrder, scorer from the roster when it is there.
        #expect(snapshot.events.map(\.id) == ["goal-100", "goal-300"])
        #expect(snapshot.events.map(\.type) == ["goal", "goal"])
        #expect(snapshot.events[0].text == "FLA goal: Sam Bennett (1) · TBL 0-1 FLA · P1 03:44")
        #expect(snapshot.events[1].text == "FLA goal · TBL 0-2 FLA · P2 05:10")
        #expect(try MatchRenderer.render(snapshot).contentState.summary == "TBL 0-2 FLA · P2 09:03")
    }

    @Test func intermissionIsABreakWithoutTheIntermissionClock() throws {
        let snapshot = try Self.snapshot(Self.playByPlay(timeRemaining: "17:12", secondsRemaining: 1032, intermission: true))
        #expect(snapshot.status == .break)
        #expect(snapshot.score == .teamTotals(TeamScore(home: 0, away: 2, period: "P2", clock: nil)))
        #expect(try MatchRenderer.render(snapshot).contentState.statusText == "Break")
    }

    @Test(arguments: [
        ("FUT", "OK", MatchStatus.scheduled), ("PRE", "OK", .scheduled), ("LIVE", "OK", .live), ("CRIT", "OK", .live),
        ("FINAL", "OK", .completed), ("OFF", "OK", .completed), ("FUT", "PPD", .postponed), ("PPD", "PPD", .postponed),
        ("LIVE", "SUSP", .postponed), ("FUT", "CNCL", .abandoned), ("OFF", "PPD", .completed),
    ])
    func statusComesFromGameAndScheduleState(_ state: String, _ schedule: String, _ expected: MatchStatus) throws {
        #expect(try Self.snapshot(Self.playByPlay(state: state, scheduleState: schedule)).status == expected)
    }

    @Test(arguments: [
        (1, "REG", "P1"), (3, "REG", "P3"), (4, "OT", "OT"), (5, "OT", "2OT"), (7, "OT", "4OT"), (5, "SO", "SO"), (4, "XYZ", "OT"),
    ])
    func periodLabels(_ number: Int, _ type: String, _ label: String) throws {
        let snapshot = try Self.snapshot(Self.playByPlay(period: number, periodType: type))
        guard case .teamTotals(let score) = snapshot.score else { Issue.record("not team totals"); return }
        #expect(score.period == label)
        #expect(score.clock == (label == "SO" ? nil : "09:03"))
    }

    @Test func finalGameKeepsItsLastPeriodAndDropsTheClock() throws {
        let snapshot = try Self.snapshot(
            Self.playByPlay(state: "OFF", period: 4, periodType: "OT", timeRemaining: "00:00", secondsRemaining: 0, home: 3, away: 2, plays: ""))
        #expect(snapshot.status == .completed)
        #expect(snapshot.score == .teamTotals(TeamScore(home: 3, away: 2, period: "OT", clock: nil)))
        #expect(snapshot.events == [])
        #expect(try MatchRenderer.render(snapshot).contentState.result == "Tampa Bay Lightning won 3-2")
    }

    @Test func scheduledGameHasNoPeriodOrClock() throws {
        let snapshot = try Self.snapshot(Self.playByPlay(state: "FUT", period: 0, timeRemaining: "20:00", secondsRemaining: 1200, plays: ""))
        #expect(snapshot.status == .scheduled)
        #expect(snapshot.score == .teamTotals(TeamScore(home: 0, away: 2, period: nil, clock: nil)))
        #expect(snapshot.seq == 0)
    }

    @Test func shootoutGoalsAreTheirOwnEventType() throws {
        let plays = """
            {"eventId": 900, "sortOrder": 900, "typeDescKey": "goal", "timeInPeriod": "00:00",
             "periodDescriptor": {"number": 5, "periodType": "SO"}, "details": {"scoringPlayerId": 8477935, "eventOwnerTeamId": 13}}
            """
        let snapshot = try Self.snapshot(Self.playByPlay(period: 5, periodType: "SO", plays: plays))
        #expect(snapshot.events == [MatchEvent(id: "goal-900", type: "shootout-goal", text: "FLA shootout goal: Sam Bennett · SO")])
    }

    @Test func onlyTheLatestTwentyGoalsAreKept() throws {
        let plays = (1...25).map { n in
            #"{"eventId": \#(n), "sortOrder": \#(n), "typeDescKey": "goal", "timeInPeriod": "01:00", "periodDescriptor": {"number": 1, "periodType": "REG"}, "details": {"homeScore": \#(n), "awayScore": 0}}"#
        }.joined(separator: ", ")
        let snapshot = try Self.snapshot(Self.playByPlay(home: 25, plays: plays))
        #expect(snapshot.events.map(\.id) == (6...25).map { "goal-\($0)" })
        #expect(snapshot.events.last?.text == "Goal · TBL 25-0 FLA · P1 01:00")
    }

    @Test func seqGrowsAsTheGameMovesOn() throws {
        let moments = [
            Self.playByPlay(state: "FUT", period: 0),
            Self.playByPlay(state: "LIVE", period: 1, timeRemaining: "20:00", secondsRemaining: 1200),
            Self.playByPlay(state: "LIVE", period: 1, timeRemaining: "09:03", secondsRemaining: 543),
            Self.playByPlay(state: "LIVE", period: 1, timeRemaining: "17:59", secondsRemaining: 1079, intermission: true),
            Self.playByPlay(state: "LIVE", period: 2, timeRemaining: "20:00", secondsRemaining: 1200),
            Self.playByPlay(state: "LIVE", period: 4, periodType: "OT", timeRemaining: "19:59", secondsRemaining: 1199),
            Self.playByPlay(state: "FINAL", period: 4, periodType: "OT", timeRemaining: "12:00", secondsRemaining: 720),
        ]
        let seqs = try moments.map { try #require(try Self.snapshot($0).seq) }
        #expect(seqs == seqs.sorted() && Set(seqs).count == seqs.count, "\(seqs)")
    }

    @Test func scoreListAndPlayByPlayAgreeOnOneMoment() throws {
        let list = try NHLWebFeed.snapshots(fromScore: Data(Self.scoreList.utf8))
        let fromPlayByPlay = try Self.snapshot(Self.playByPlay())
        let fromList = try #require(list.matches.first)
        #expect(fromList.seq == fromPlayByPlay.seq)
        #expect(fromList.score == fromPlayByPlay.score)
        #expect(fromList.home == Team(id: "14", name: "Lightning", short: "TBL"))
    }

    @Test func scoreListConvertsEveryGame() throws {
        let list = try NHLWebFeed.snapshots(fromScore: Data(Self.scoreList.utf8))
        #expect(list.date == "2025-04-22")
        #expect(list.matches.map(\.id) == ["nhl:2024030121", "nhl:2024030131", "nhl:2024030141", "nhl:2024030151", "nhl:2024030161", "nhl:2024030171"])
        #expect(list.matches.map(\.status) == [.live, .break, .completed, .completed, .scheduled, .postponed])
        #expect(list.matches.map(\.score) == [
            .teamTotals(TeamScore(home: 0, away: 2, period: "P2", clock: "09:03")),
            .teamTotals(TeamScore(home: 3, away: 3, period: "OT", clock: nil)),
            .teamTotals(TeamScore(home: 4, away: 3, period: "SO", clock: nil)),
            .teamTotals(TeamScore(home: 1, away: 5, period: "P3", clock: nil)),
            .teamTotals(TeamScore(home: 0, away: 0, period: nil, clock: nil)),
            .teamTotals(TeamScore(home: 0, away: 0, period: nil, clock: nil)),
        ])
    }

    @Test(arguments: [
        (#""gameState": "LIVE""#, #""gameState": 7"#, "gameState"),
        (#""gameState": "LIVE""#, #""gameState": "HALFTIME""#, "gameState"),
        (#""id": 2024030121, "season""#, #""season""#, "id"),
        (#""homeTeam": {"id": 14, "#, #""homeTeam": {"#, "homeTeam.id"),
        (#""abbrev": "TBL", "score": 0"#, #""abbrev": "TBL", "score": -1"#, "homeTeam.score"),
        (#""periodDescriptor": {"number": 2,"#, #""periodDescriptor": {"number": 99999,"#, "periodDescriptor.number"),
        (#""secondsRemaining": 543"#, #""secondsRemaining": 9000000000"#, "clock.secondsRemaining"),
        (#""plays": ["#, #""plays": 5, "x": ["#, "plays"),
        (#""eventId": 100, "#, "", "plays[0].eventId"),
    ])
    func malformedDocumentsNameTheField(_ original: String, _ replacement: String, _ field: String) throws {
        let json = Self.playByPlay().replacingOccurrences(of: original, with: replacement)
        #expect(json != Self.playByPlay())
        let error = #expect(throws: InputError.self) { try NHLWebFeed.snapshot(fromPlayByPlay: Data(json.utf8)) }
        #expect(error?.field == field, "\(String(describing: error))")
    }

    @Test(arguments: ["", "[]", "null", "{\"games\": 3}", "\u{0}\u{1}"])
    func hostileBodiesFailWithoutCrashing(_ body: String) {
        #expect(throws: InputError.self) { try NHLWebFeed.snapshot(fromPlayByPlay: Data(body.utf8)) }
        #expect(throws: InputError.self) { try NHLWebFeed.snapshots(fromScore: Data(body.utf8)) }
    }

    @Test func aBadGameInAScoreListNamesItsIndex() throws {
        let json = Self.scoreList.replacingOccurrences(of: #""gameState": "OFF""#, with: #""gameState": "WHAT""#)
        let error = #expect(throws: InputError.self) { try NHLWebFeed.snapshots(fromScore: Data(json.utf8)) }
        #expect(error?.field == "games[3].gameState")
    }

    // MARK: Legacy statsapi

    static func statsAPI(abstract: String = "Live", coded: String = "3", period: Int = 2, ordinal: String = "2nd",
                         remaining: String = "12:34", intermission: Bool = false, hasShootout: Bool = false) -> String {
        """
        {"gamePk": 2022020799, "metaData": {"wait": 10, "timeStamp": "20230131_203952"},
         "gameData": {"game": {"pk": 2022020799}, "datetime": {"dateTime": "2023-01-29T22:00:00Z"},
          "status": {"abstractGameState": "\(abstract)", "codedGameState": "\(coded)", "detailedState": "In Progress"},
          "teams": {"home": {"id": 12, "name": "Carolina Hurricanes", "abbreviation": "CAR"},
                    "away": {"id": 6, "name": "Boston Bruins", "abbreviation": "BOS"}},
          "venue": {"name": "PNC Arena"}},
         "liveData": {"linescore": {"currentPeriod": \(period), "currentPeriodOrdinal": "\(ordinal)",
           "currentPeriodTimeRemaining": "\(remaining)", "hasShootout": \(hasShootout),
           "teams": {"home": {"goals": 1}, "away": {"goals": 0}},
           "intermissionInfo": {"inIntermission": \(intermission)}},
          "plays": {"scoringPlays": [1],
           "allPlays": [
            {"result": {"eventTypeId": "FACEOFF"}, "about": {"eventIdx": 0, "eventId": 1, "period": 1}},
            {"result": {"eventTypeId": "GOAL", "description": "Sebastian Aho (21) Wrist Shot, assists: none"},
             "about": {"eventIdx": 1, "eventId": 33, "period": 1, "periodType": "REGULAR", "periodTime": "10:52",
                       "dateTime": "2023-01-29T22:22:11Z", "goals": {"away": 0, "home": 1}},
             "team": {"id": 12, "triCode": "CAR"}}]}}}
        """
    }

    @Test func statsAPILiveFeedConverts() throws {
        let (snapshot, wait) = try NHLStatsAPIFeed.snapshot(from: Data(Self.statsAPI().utf8))
        #expect(wait == 10)
        #expect(snapshot.id == "nhl:2022020799")
        #expect(snapshot.status == .live)
        #expect(snapshot.home == Team(id: "12", name: "Carolina Hurricanes", short: "CAR"))
        #expect(snapshot.score == .teamTotals(TeamScore(home: 1, away: 0, period: "P2", clock: "12:34")))
        #expect(snapshot.seq == 2)
        #expect(snapshot.events == [
            MatchEvent(
                id: "goal-33", type: "goal", at: JSON.parseDate("2023-01-29T22:22:11Z"),
                text: "CAR goal: Sebastian Aho (21) Wrist Shot, assists: none · CAR 1-0 BOS · P1 10:52"),
        ])
    }

    @Test func statsAPIIntermissionShootoutAndFinal() throws {
        let paused = try NHLStatsAPIFeed.snapshot(from: Data(Self.statsAPI(remaining: "END", intermission: true).utf8)).snapshot
        #expect(paused.status == .break)
        #expect(paused.score == .teamTotals(TeamScore(home: 1, away: 0, period: "P2", clock: nil)))
        let shootout = try NHLStatsAPIFeed.snapshot(from: Data(Self.statsAPI(period: 5, ordinal: "SO", hasShootout: true).utf8)).snapshot
        #expect(shootout.score == .teamTotals(TeamScore(home: 1, away: 0, period: "SO", clock: nil)))
        let doubleOT = try NHLStatsAPIFeed.snapshot(from: Data(Self.statsAPI(abstract: "Final", coded: "7", period: 5, ordinal: "2OT", remaining: "Final").utf8)).snapshot
        #expect(doubleOT.status == .completed)
        #expect(doubleOT.score == .teamTotals(TeamScore(home: 1, away: 0, period: "2OT", clock: nil)))
        let postponed = try NHLStatsAPIFeed.snapshot(from: Data(Self.statsAPI(abstract: "Preview", coded: "9").utf8)).snapshot
        #expect(postponed.status == .postponed)
    }

    @Test func statsAPIMalformedNamesTheField() throws {
        let bad = Self.statsAPI().replacingOccurrences(of: #""scoringPlays": [1]"#, with: #""scoringPlays": [7]"#)
        let error = #expect(throws: InputError.self) { try NHLStatsAPIFeed.snapshot(from: Data(bad.utf8)) }
        #expect(error?.field == "liveData.plays.scoringPlays[0]")
        let unknown = Self.statsAPI(abstract: "Paused")
        let stateError = #expect(throws: InputError.self) { try NHLStatsAPIFeed.snapshot(from: Data(unknown.utf8)) }
        #expect(stateError?.field == "gameData.status.abstractGameState")
    }
}
