import Foundation
import Testing
@testable import MatchcastCore

// Display strings and the `derived` score (docs/formats.md, "Content-state").

private enum RenderFixture {
    static let mun = Team(id: "mun", name: "Manchester United", short: "MUN")
    static let liv = Team(id: "liv", name: "Liverpool", short: "LIV")
    static let bos = Team(id: "bos", name: "Boston Red Sox", short: "BOS")
    static let nyy = Team(id: "nyy", name: "New York Yankees", short: "NYY")
    static let alcaraz = Team(id: "alc", name: "Carlos Alcaraz", short: "ALC")
    static let sinner = Team(id: "sin", name: "Jannik Sinner", short: "SIN")
    static let mi = Team(id: "mi", name: "Mumbai Indians", short: "MI")
    static let csk = Team(id: "csk", name: "Chennai Super Kings", short: "CSK")

    static func football(_ status: MatchStatus, _ home: Int, _ away: Int, period: String? = "2H", clock: String? = "67'") -> MatchSnapshot {
        MatchSnapshot(id: "epl-1", sport: .football, status: status, home: mun, away: liv,
                      score: .teamTotals(TeamScore(home: home, away: away, period: period, clock: clock)))
    }

    static func baseball(
        _ status: MatchStatus = .live, home: Int = 3, away: Int = 2, inning: Int = 7, half: BaseballScore.Half = .top,
        outs: Int = 1, bases: [Bool] = [true, false, true]
    ) -> MatchSnapshot {
        MatchSnapshot(id: "mlb-1", sport: .baseball, status: status, home: bos, away: nyy,
                      score: .baseball(BaseballScore(home: home, away: away, inning: inning, half: half, outs: outs, bases: bases)))
    }

    static func tennis(_ points: String, status: MatchStatus = .live, bestOf: Int = 3) -> MatchSnapshot {
        MatchSnapshot(id: "atp-1", sport: .tennis, status: status, home: alcaraz, away: sinner,
                      score: .tennis(TennisScore(rules: TennisRules(bestOf: bestOf, firstServer: .home, finalSetTiebreak: 7), points: points)))
    }

    static func cricket(_ status: MatchStatus, innings: [CricketScore.Innings], batters: [CricketScore.Batter] = []) -> MatchSnapshot {
        MatchSnapshot(id: "ipl-2026-m41", sport: .cricket, status: status, home: mi, away: csk,
                      score: .cricket(CricketScore(format: .t20, oversLimit: 20, innings: innings, batters: batters,
                                                   bowler: .init(name: "Jasprit Bumrah", balls: 20, runs: 18, wickets: 2))))
    }

    // Tennis point sequences, built game by game. Home serves first; the server alternates each game.
    static func game(_ winner: Side) -> String { winner == .home ? "HHHH" : "AAAA" }
    /// `count` games all held, the first served by `server`.
    static func holds(_ count: Int, from server: Side = .home) -> String {
        (0..<count).map { game($0 % 2 == 0 ? server : server.opponent) }.joined()
    }
    /// 6-4 to home: holds to 4-4, home holds, then breaks the away serve.
    static let firstSet64 = holds(8) + game(.home) + game(.home)
    /// After 6-4 home serves first again (ten games played): 3-2 home, all holds.
    static let secondSet32 = holds(5)
    /// Away serving at 3-2: home leads 30-15.
    static let thirtyFifteen = "HHA"

    static func json(_ value: some Encodable) throws -> String {
        String(decoding: try JSON.encoder().encode(value), as: UTF8.self)
    }

    static func object(_ value: some Encodable) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: try JSON.encoder().encode(value)) as? [String: Any])
    }
}

@Suite("Match renderer")
struct RendererTests {
    fileprivate typealias F = RenderFixture

    // MARK: Team totals

    @Test func footballLiveSummary() throws {
        let state = try MatchRenderer.render(F.football(.live, 2, 1)).contentState
        #expect(state.summary == "MUN 2-1 LIV · 2H 67'")
        #expect(state.home == .init(name: "MUN", score: "2"))
        #expect(state.away == .init(name: "LIV", score: "1"))
        #expect(state.period == "2H")
        #expect(state.clock == "67'")
        #expect(state.status == "live")
        #expect(state.statusText == "Live")
        #expect(state.result == nil)
        #expect(state.sets == nil && state.inning == nil && state.batting == nil)
    }

    @Test func footballSummaryWithoutClockOrPeriod() throws {
        #expect(try MatchRenderer.render(F.football(.live, 0, 0, period: nil, clock: nil)).contentState.summary == "MUN 0-0 LIV")
        #expect(try MatchRenderer.render(F.football(.break, 1, 0, period: "HT", clock: "")).contentState.summary == "MUN 1-0 LIV · HT")
    }

    @Test func completedFootballResultLine() throws {
        let home = try MatchRenderer.render(F.football(.completed, 2, 1, period: "FT", clock: "90+4'")).contentState
        #expect(home.result == "Manchester United won 2-1")
        #expect(home.summary == "MUN 2-1 LIV")
        #expect(home.statusText == "Final")
        #expect(try MatchRenderer.render(F.football(.completed, 1, 3)).contentState.result == "Liverpool won 3-1")
        #expect(try MatchRenderer.render(F.football(.completed, 2, 2)).contentState.result == "Draw 2-2")
        #expect(try MatchRenderer.render(F.football(.abandoned, 0, 0)).contentState.result == "Abandoned")
        #expect(try MatchRenderer.render(F.football(.live, 2, 1)).contentState.result == nil)
    }

    @Test func totalsDerivedMatchesTheContract() throws {
        let rendered = try MatchRenderer.render(F.football(.live, 2, 1))
        #expect(try F.json(rendered.derived) == #"{"away":1,"clock":"67'","home":2,"period":"2H"}"#)
        let bare = try MatchRenderer.render(F.football(.live, 0, 0, period: nil, clock: nil))
        #expect(try F.json(bare.derived) == #"{"away":0,"clock":null,"home":0,"period":null}"#)
    }

    @Test func footballContentStateCarriesOnlyItsOwnKeys() throws {
        let keys = Set(try F.object(MatchRenderer.render(F.football(.live, 2, 1)).contentState).keys)
        #expect(keys == ["status", "statusText", "home", "away", "summary", "period", "clock"])
    }

    // MARK: Baseball

    @Test func baseballInningOutsAndBases() throws {
        let state = try MatchRenderer.render(F.baseball()).contentState
        #expect(state.inning == "Top 7th")
        #expect(state.outs == "1 out")
        #expect(state.bases == "Runners on 1st & 3rd")
        #expect(state.summary == "NYY 2-3 BOS · Top 7th, 1 out")
        #expect(state.home.score == "3")
        #expect(state.away.score == "2")
    }

    @Test(arguments: [
        ([false, false, false], "Bases empty"),
        ([true, true, true], "Bases loaded"),
        ([false, true, false], "Runner on 2nd"),
        ([true, true, false], "Runners on 1st & 2nd"),
        ([false, true, true], "Runners on 2nd & 3rd"),
        ([true, false, true], "Runners on 1st & 3rd"),
    ])
    func baseballBases(bases: [Bool], text: String) throws {
        #expect(try MatchRenderer.render(F.baseball(bases: bases)).contentState.bases == text)
    }

    @Test(arguments: [(0, "0 outs"), (1, "1 out"), (2, "2 outs"), (3, "3 outs")])
    func baseballOuts(outs: Int, text: String) throws {
        #expect(try MatchRenderer.render(F.baseball(outs: outs)).contentState.outs == text)
    }

    @Test(arguments: [
        (1, BaseballScore.Half.top, "Top 1st"), (2, .bottom, "Bot 2nd"), (3, .top, "Top 3rd"), (4, .top, "Top 4th"),
        (9, .bottom, "Bot 9th"), (11, .top, "Top 11th"), (12, .top, "Top 12th"), (13, .bottom, "Bot 13th"),
        (21, .top, "Top 21st"), (22, .top, "Top 22nd"), (23, .bottom, "Bot 23rd"),
    ])
    func baseballInnings(inning: Int, half: BaseballScore.Half, text: String) throws {
        #expect(try MatchRenderer.render(F.baseball(inning: inning, half: half)).contentState.inning == text)
    }

    @Test func finalBaseballShowsTheResultNotTheInning() throws {
        let state = try MatchRenderer.render(F.baseball(.completed, home: 5, away: 4, inning: 9, half: .bottom)).contentState
        #expect(state.inning == nil && state.outs == nil && state.bases == nil)
        #expect(state.summary == "NYY 4-5 BOS")
        #expect(state.result == "Boston Red Sox won 5-4")
    }

    @Test func baseballDerivedAddsInningHalfOutsAndBases() throws {
        let json = try F.json(MatchRenderer.render(F.baseball()).derived)
        #expect(json == #"{"away":2,"bases":[true,false,true],"clock":null,"half":"top","home":3,"inning":7,"outs":1,"period":"Top 7th"}"#)
    }

    // MARK: Tennis

    @Test func tennisSummaryFromARealPointSequence() throws {
        let rendered = try MatchRenderer.render(F.tennis(F.firstSet64 + F.secondSet32 + F.thirtyFifteen))
        let state = rendered.contentState
        #expect(state.summary == "6-4 3-2 · 30-15")
        #expect(state.sets == "6-4 3-2")
        #expect(state.game == "30-15")
        #expect(state.serving == .away)
        #expect(state.home == .init(name: "ALC", score: "6 3"))
        #expect(state.away == .init(name: "SIN", score: "4 2"))
        #expect(state.result == nil)
        #expect(try F.json(rendered.derived)
            == #"{"games":[3,2],"points":["30","15"],"server":"away","sets":[[6,4],[3,2]],"tiebreak":false,"winner":null}"#)
    }

    @Test func tennisDerivedRightAfterTheFirstSet() throws {
        let rendered = try MatchRenderer.render(F.tennis(F.firstSet64))
        #expect(try F.json(rendered.derived)
            == #"{"games":[0,0],"points":["0","0"],"server":"home","sets":[[6,4],[0,0]],"tiebreak":false,"winner":null}"#)
        #expect(rendered.contentState.sets == "6-4 0-0")
    }

    @Test func tennisDeuceAndAdvantage() throws {
        let deuce = try MatchRenderer.render(F.tennis(F.firstSet64 + "HHHAAA"))
        guard case .tennis(let derived) = deuce.derived else { Issue.record("not tennis"); return }
        #expect(derived.points == ["40", "40"])
        #expect(deuce.contentState.game == "40-40")
        let json = try F.object(deuce.derived)
        #expect(json["points"] as? [String] == ["40", "40"])
        let advantage = try MatchRenderer.render(F.tennis(F.firstSet64 + "HHHAAAA")).contentState
        #expect(advantage.game == "40-AD")
    }

    @Test func tennisTiebreakPointsAreCounts() throws {
        let rendered = try MatchRenderer.render(F.tennis(F.holds(12) + "HHHHHAAA"))
        guard case .tennis(let derived) = rendered.derived else { Issue.record("not tennis"); return }
        #expect(derived.tiebreak)
        #expect(derived.points == ["5", "3"])
        #expect(derived.games == [6, 6])
        #expect(rendered.contentState.game == "5-3")
    }

    @Test func tennisFinishedMatchHasAWinnerAndResult() throws {
        let points = String(repeating: "HHHH", count: 12)
        let rendered = try MatchRenderer.render(F.tennis(points, status: .completed))
        #expect(try F.json(rendered.derived)
            == #"{"games":[6,0],"points":["0","0"],"server":"home","sets":[[6,0],[6,0]],"tiebreak":false,"winner":"home"}"#)
        #expect(rendered.contentState.result == "Carlos Alcaraz won 6-0 6-0")
        #expect(rendered.contentState.summary == "6-0 6-0")
        #expect(rendered.contentState.game == nil)
        #expect(rendered.contentState.serving == nil)
    }

    @Test func tennisResultReadsFromTheWinnersSide() throws {
        let points = String(repeating: "AAAA", count: 6) + F.holds(12) + "HHHHHHH" + String(repeating: "AAAA", count: 6)
        let state = try MatchRenderer.render(F.tennis(points, status: .completed)).contentState
        #expect(state.sets == "0-6 7-6(0) 0-6")
        #expect(state.result == "Jannik Sinner won 6-0 6-7(0) 6-0")
    }

    @Test func tennisPointAfterMatchPointIsAFieldError() {
        let error = #expect(throws: InputError.self) {
            try MatchRenderer.render(F.tennis(String(repeating: "HHHH", count: 12) + "A"))
        }
        #expect(error?.field == "score.points")
        #expect(error?.description.contains("index 48") == true)
    }

    @Test func tennisContentStateKeys() throws {
        let keys = Set(try F.object(MatchRenderer.render(F.tennis(F.firstSet64 + "H")).contentState).keys)
        #expect(keys == ["status", "statusText", "home", "away", "summary", "sets", "game", "serving"])
    }

    // MARK: Cricket

    @Test func cricketDerivedKeysArePresentWithNulls() throws {
        let first = F.cricket(.live, innings: [.init(team: "mi", runs: 87, wickets: 6, balls: 86)])
        let json = try F.json(MatchRenderer.render(first).derived)
        #expect(json == #"{"innings":[{"overs":"14.2","runRate":"6.07","runs":87,"team":"mi","wickets":6}],"need":null,"result":null,"target":null}"#)
    }

    @Test func cricketDerivedDuringAChase() throws {
        let chase = F.cricket(.live, innings: [
            .init(team: "csk", runs: 164, wickets: 7, balls: 120),
            .init(team: "mi", runs: 87, wickets: 6, balls: 86, target: 165),
        ])
        let rendered = try MatchRenderer.render(chase)
        let json = try F.object(rendered.derived)
        #expect(json["target"] as? Int == 165)
        let need = try #require(json["need"] as? [String: Int])
        #expect(need == ["runs": 78, "balls": 34])
        #expect(json["result"] is NSNull)
        #expect(rendered.contentState.summary == "MI 87/6 (14.2) · Need 78 off 34")
        #expect(rendered.contentState.runRate == "RR 6.07")
        #expect(rendered.contentState.equation == "Need 78 off 34")
    }

    @Test func cricketResultEncodesAndNeedIsNullOnceFinal() throws {
        let done = F.cricket(.completed, innings: [
            .init(team: "mi", runs: 192, wickets: 5, balls: 120),
            .init(team: "csk", runs: 165, wickets: 10, balls: 117),
        ])
        let rendered = try MatchRenderer.render(done)
        let json = try F.object(rendered.derived)
        #expect(json["need"] is NSNull)
        #expect(json["result"] as? String == "MI won by 27 runs")
        #expect(rendered.contentState.result == "MI won by 27 runs")
        #expect(rendered.contentState.summary == "MI won by 27 runs")
    }

    // MARK: Status text

    @Test(arguments: [
        (MatchStatus.scheduled, Sport.football, "Scheduled"),
        (.live, .cricket, "Live"),
        (.break, .cricket, "Innings break"),
        (.break, .football, "Half-time"),
        (.break, .tennis, "Suspended"),
        (.break, .basketball, "Break"),
        (.completed, .hockey, "Final"),
        (.abandoned, .cricket, "Abandoned"),
        (.postponed, .baseball, "Postponed"),
    ])
    func statusTexts(status: MatchStatus, sport: Sport, text: String) throws {
        let snapshot = MatchSnapshot(id: "x", sport: sport, status: status, home: F.mun, away: F.liv, score: .empty(for: sport))
        let state = try MatchRenderer.render(snapshot).contentState
        #expect(state.statusText == text)
        #expect(state.status == status.rawValue)
    }

    @Test func everySportAndStatusRendersWithoutThrowing() throws {
        for sport in Sport.allCases {
            for status in MatchStatus.allCases {
                let snapshot = MatchSnapshot(id: "x", sport: sport, status: status, home: F.mun, away: F.liv, score: .empty(for: sport))
                let state = try MatchRenderer.render(snapshot).contentState
                #expect(!state.summary.isEmpty, "\(sport) \(status)")
                #expect(state.home.name == "MUN" && state.away.name == "LIV")
            }
        }
    }
}
