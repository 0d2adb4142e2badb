import Foundation
import MatchcastCore
import Testing

/// Builders for cricket snapshots: MI (home) and CSK (away) unless a test says otherwise.
private enum Fixture {
    static let mi = Team(id: "mi", name: "Mumbai Indians", short: "MI")
    static let csk = Team(id: "csk", name: "Chennai Super Kings", short: "CSK")
    static let nz = Team(id: "nz", name: "New Zealand", short: "NZ")
    static let eng = Team(id: "eng", name: "England", short: "ENG")
    static let ind = Team(id: "ind", name: "India", short: "IND")

    static func snapshot(
        _ status: MatchStatus, _ score: CricketScore, home: Team = mi, away: Team = csk, events: [MatchEvent] = []
    ) -> MatchSnapshot {
        MatchSnapshot(id: "m1", sport: .cricket, status: status, home: home, away: away, score: .cricket(score), events: events)
    }

    static let rohit = CricketScore.Batter(name: "Rohit Sharma", runs: 45, balls: 32)
    static let tilak = CricketScore.Batter(name: "Tilak Varma", runs: 12, balls: 9, onStrike: true)
    static let bumrah = CricketScore.Bowler(name: "Jasprit Bumrah", balls: 20, runs: 18, wickets: 2)

    /// The contract's example: CSK made 164, MI are 87/6 after 14.2 overs chasing 165.
    static func chase(_ status: MatchStatus = .live, runs: Int = 87, wickets: Int = 6, balls: Int = 86, target: Int? = 165) -> MatchSnapshot {
        snapshot(status, CricketScore(
            format: .t20,
            innings: [
                .init(team: "csk", runs: 164, wickets: 7, balls: 120),
                .init(team: "mi", runs: runs, wickets: wickets, balls: balls, target: target),
            ],
            batters: [rohit, tilak], bowler: bumrah))
    }

    static func limited(
        _ innings: [CricketScore.Innings], format: CricketScore.Format = .t20, method: String? = nil,
        winner: String? = nil, home: Team = mi, away: Team = csk, status: MatchStatus = .completed
    ) -> (MatchSnapshot, CricketScore) {
        let score = CricketScore(format: format, innings: innings, method: method, winner: winner)
        return (snapshot(status, score, home: home, away: away), score)
    }

    static func result(_ pair: (MatchSnapshot, CricketScore)) -> String? {
        CricketResult.line(for: pair.0, score: pair.1)
    }

    static func score(_ snapshot: MatchSnapshot) -> CricketScore {
        guard case .cricket(let score) = snapshot.score else { fatalError("not cricket") }
        return score
    }

    static func render(_ snapshot: MatchSnapshot) -> ContentState {
        var state = ContentState(
            status: snapshot.status.rawValue, statusText: "Live",
            home: .init(name: snapshot.home.short, score: "?"), away: .init(name: snapshot.away.short, score: "?"),
            summary: "?")
        CricketRender.apply(snapshot, score(snapshot), to: &state)
        return state
    }
}

@Suite struct CricketFormatTests {
    @Test(arguments: [(86, "14.2"), (120, "20.0"), (0, "0.0"), (5, "0.5"), (6, "1.0"), (723, "120.3")])
    func overs(balls: Int, expected: String) {
        #expect(CricketFormat.overs(balls: balls) == expected)
    }

    @Test func scoreShowsWicketsUnlessAllOutAndMarksDeclarations() {
        #expect(CricketFormat.score(.init(team: "mi", runs: 87, wickets: 6, balls: 86)) == "87/6 (14.2)")
        #expect(CricketFormat.score(.init(team: "mi", runs: 241, wickets: 10, balls: 300)) == "241 (50.0)")
        #expect(CricketFormat.score(.init(team: "mi", runs: 450, wickets: 7, balls: 723, declared: true)) == "450/7d (120.3)")
        #expect(CricketFormat.score(.init(team: "mi", runs: 0, wickets: 0, balls: 0)) == "0/0 (0.0)")
        #expect(CricketFormat.total(.init(team: "mi", runs: 210, wickets: 10, balls: 400)) == "210")
    }

    @Test(arguments: [
        (87, 86, "6.07"), (0, 0, "0.00"), (120, 120, "6.00"), (10, 1, "60.00"),
        // Exact halves round up where a binary float or round-half-even would give 0.12 / 2.62.
        (1, 48, "0.13"), (7, 16, "2.63"), (78, 34, "13.76"), (0, 12, "0.00"),
    ])
    func runRate(runs: Int, balls: Int, expected: String) {
        #expect(CricketFormat.runRate(runs: runs, balls: balls) == expected)
    }

    @Test func batterMarksOnlyTheStriker() {
        #expect(CricketFormat.batter(.init(name: "Rohit Sharma", runs: 45, balls: 32, onStrike: true)) == "Rohit Sharma* 45 (32)")
        #expect(CricketFormat.batter(Fixture.rohit) == "Rohit Sharma 45 (32)")
        #expect(CricketFormat.batter(.init(name: "Tilak Varma", runs: 12, balls: 9)) == "Tilak Varma 12 (9)")
    }

    @Test(arguments: [
        ("Jasprit Bumrah", "J Bumrah"), ("CR Woakes", "CR Woakes"), ("MS Dhoni", "MS Dhoni"),
        ("AB de Villiers", "AB de Villiers"), ("Quinton de Kock", "Q de Kock"), ("Rashid", "Rashid"),
        ("Rassie van der Dussen", "R van der Dussen"), ("Shaheen Shah Afridi", "SS Afridi"),
        ("Jean-Paul Duminy", "JP Duminy"), ("J Bumrah", "J Bumrah"),
    ])
    func bowlerName(name: String, expected: String) {
        #expect(CricketFormat.bowlerName(name) == expected)
    }

    @Test func bowlerFigures() {
        #expect(CricketFormat.bowler(Fixture.bumrah) == "J Bumrah 2/18 (3.2)")
    }
}

@Suite struct CricketResultTests {
    typealias Innings = CricketScore.Innings

    @Test func noLineUntilFinal() {
        for status in [MatchStatus.scheduled, .live, .break, .postponed] {
            #expect(Fixture.result(Fixture.limited([.init(team: "csk", runs: 164, wickets: 7, balls: 120)], status: status)) == nil)
        }
        #expect(CricketResult.line(for: Fixture.chase(), score: Fixture.score(Fixture.chase())) == nil)
    }

    @Test func abandonedIsNoResult() {
        let innings = [Innings(team: "csk", runs: 164, wickets: 7, balls: 120), .init(team: "mi", runs: 170, wickets: 2, balls: 100)]
        #expect(Fixture.result(Fixture.limited(innings, status: .abandoned)) == "No result")
    }

    @Test func chaseReachedWinsByWicketsLeft() {
        let innings = [Innings(team: "csk", runs: 164, wickets: 7, balls: 120), .init(team: "mi", runs: 166, wickets: 5, balls: 110, target: 165)]
        #expect(Fixture.result(Fixture.limited(innings)) == "MI won by 5 wickets")
        let last = [innings[0], .init(team: "mi", runs: 165, wickets: 9, balls: 120, target: 165)]
        #expect(Fixture.result(Fixture.limited(last)) == "MI won by 1 wicket")
    }

    @Test func chaseShortWinsByRunsForTheSideBattingFirst() {
        let innings = [Innings(team: "mi", runs: 191, wickets: 4, balls: 120), .init(team: "csk", runs: 164, wickets: 8, balls: 120, target: 192)]
        #expect(Fixture.result(Fixture.limited(innings)) == "MI won by 27 runs")
        let close = [innings[0], .init(team: "csk", runs: 190, wickets: 10, balls: 118, target: 192)]
        #expect(Fixture.result(Fixture.limited(close)) == "MI won by 1 run")
    }

    @Test func targetDefaultsToFirstInningsPlusOne() {
        let won = [Innings(team: "csk", runs: 164, wickets: 7, balls: 120), .init(team: "mi", runs: 165, wickets: 3, balls: 100)]
        #expect(Fixture.result(Fixture.limited(won)) == "MI won by 7 wickets")
        let lost = [won[0], .init(team: "mi", runs: 150, wickets: 10, balls: 111)]
        #expect(Fixture.result(Fixture.limited(lost)) == "CSK won by 14 runs")
        let tied = [won[0], .init(team: "mi", runs: 164, wickets: 8, balls: 120)]
        #expect(Fixture.result(Fixture.limited(tied)) == "Match tied")
    }

    @Test func superOverDecidesATie() {
        let innings = [
            Innings(team: "nz", runs: 241, wickets: 8, balls: 300), .init(team: "eng", runs: 241, wickets: 10, balls: 300),
            .init(team: "eng", runs: 15, wickets: 0, balls: 6, superOver: true), .init(team: "nz", runs: 12, wickets: 1, balls: 6, superOver: true),
        ]
        #expect(Fixture.result(Fixture.limited(innings, format: .odi, home: Fixture.nz, away: Fixture.eng)) == "Match tied (ENG won the super over)")
    }

    @Test func worldCupFinal2019IsDecidedOnBoundaryCount() {
        let innings = [
            Innings(team: "nz", runs: 241, wickets: 8, balls: 300), .init(team: "eng", runs: 241, wickets: 10, balls: 300),
            .init(team: "eng", runs: 15, wickets: 0, balls: 6, superOver: true), .init(team: "nz", runs: 15, wickets: 1, balls: 6, superOver: true),
        ]
        let final = Fixture.limited(innings, format: .odi, winner: "eng", home: Fixture.nz, away: Fixture.eng)
        #expect(Fixture.result(final) == "Match tied (ENG won on boundary count)")
        #expect(CricketFormat.score(innings[0]) == "241/8 (50.0)")
        #expect(CricketFormat.score(innings[1]) == "241 (50.0)")
        let noWinner = Fixture.limited(innings, format: .odi, home: Fixture.nz, away: Fixture.eng)
        #expect(Fixture.result(noWinner) == "Match tied")
    }

    @Test func secondSuperOverDecidesWhenTheFirstIsTied() {
        let innings = [
            Innings(team: "mi", runs: 176, wickets: 6, balls: 120), .init(team: "csk", runs: 176, wickets: 6, balls: 120),
            .init(team: "csk", runs: 5, wickets: 2, balls: 5, superOver: true), .init(team: "mi", runs: 5, wickets: 0, balls: 6, superOver: true),
            .init(team: "mi", runs: 11, wickets: 1, balls: 6, superOver: true), .init(team: "csk", runs: 12, wickets: 0, balls: 4, superOver: true),
        ]
        #expect(Fixture.result(Fixture.limited(innings)) == "Match tied (CSK won the super over)")
    }

    @Test func statedWinnerOfATieWithoutSuperOver() {
        let innings = [Innings(team: "mi", runs: 150, wickets: 6, balls: 120), .init(team: "csk", runs: 150, wickets: 9, balls: 120)]
        #expect(Fixture.result(Fixture.limited(innings, winner: "csk")) == "Match tied (CSK won)")
        #expect(Fixture.result(Fixture.limited(innings, winner: "nobody")) == "Match tied")
    }

    @Test func methodIsAppendedToAWinOnly() {
        let won = [Innings(team: "mi", runs: 180, wickets: 5, balls: 120), .init(team: "csk", runs: 140, wickets: 5, balls: 90, target: 139, oversLimit: 15)]
        #expect(Fixture.result(Fixture.limited(won, method: "D/L")) == "CSK won by 5 wickets (D/L)")
        let lost = [won[0], .init(team: "csk", runs: 120, wickets: 7, balls: 90, target: 139, oversLimit: 15)]
        #expect(Fixture.result(Fixture.limited(lost, method: "D/L")) == "MI won by 18 runs (D/L)")
        let tied = [won[0], .init(team: "csk", runs: 138, wickets: 7, balls: 90, target: 139, oversLimit: 15)]
        #expect(Fixture.result(Fixture.limited(tied, method: "D/L")) == "Match tied")
    }

    @Test func statedWinnerOverridesTotalsThatDisagree() {
        // Rain ended the chase ahead of par: the totals alone would give MI the win.
        let innings = [Innings(team: "mi", runs: 180, wickets: 5, balls: 120), .init(team: "csk", runs: 120, wickets: 3, balls: 90, target: 181)]
        #expect(Fixture.result(Fixture.limited(innings, method: "D/L", winner: "csk")) == "CSK won (D/L)")
        #expect(Fixture.result(Fixture.limited(innings, method: "D/L", winner: "mi")) == "MI won by 60 runs (D/L)")
    }

    @Test func fewerThanTwoInningsIsNoResultUnlessAWinnerIsStated() {
        let innings = [Innings(team: "mi", runs: 180, wickets: 5, balls: 120)]
        #expect(Fixture.result(Fixture.limited(innings)) == "No result")
        #expect(Fixture.result(Fixture.limited([])) == "No result")
        #expect(Fixture.result(Fixture.limited(innings, winner: "csk")) == "CSK won")
    }

    // MARK: Tests

    private func test(_ innings: [Innings], winner: String? = nil) -> String? {
        Fixture.result(Fixture.limited(innings, format: .test, winner: winner, home: Fixture.eng, away: Fixture.ind))
    }

    @Test func testInningsWinWhenTheLoserBattedTwice() {
        let innings = [
            Innings(team: "eng", runs: 400, wickets: 10, balls: 800), .init(team: "ind", runs: 150, wickets: 10, balls: 300),
            .init(team: "ind", runs: 238, wickets: 10, balls: 500),
        ]
        #expect(test(innings, winner: "eng") == "ENG won by an innings and 12 runs")
        #expect(test(innings) == "ENG won by an innings and 12 runs")
        let oneRun = [innings[0], innings[1], .init(team: "ind", runs: 249, wickets: 10, balls: 500)]
        #expect(test(oneRun) == "ENG won by an innings and 1 run")
    }

    @Test func testInningsWinWhereTheSideBattingFirstBattedTwice() {
        let innings = [
            Innings(team: "ind", runs: 150, wickets: 10, balls: 300), .init(team: "eng", runs: 500, wickets: 6, balls: 900, declared: true),
            .init(team: "ind", runs: 200, wickets: 10, balls: 400),
        ]
        #expect(test(innings) == "ENG won by an innings and 150 runs")
    }

    @Test func testUnfinishedFollowOnIsADrawWithoutAWinner() {
        let innings = [
            Innings(team: "eng", runs: 400, wickets: 10, balls: 800), .init(team: "ind", runs: 150, wickets: 10, balls: 300),
            .init(team: "ind", runs: 200, wickets: 4, balls: 500),
        ]
        #expect(test(innings) == "Match drawn")
    }

    @Test func testFourthInningsChase() {
        let first = [
            Innings(team: "eng", runs: 300, wickets: 10, balls: 600), .init(team: "ind", runs: 250, wickets: 10, balls: 500),
            .init(team: "eng", runs: 200, wickets: 10, balls: 400),
        ]
        // Target 251: 500 − 250 + 1.
        #expect(test(first + [.init(team: "ind", runs: 251, wickets: 7, balls: 450)]) == "IND won by 3 wickets")
        #expect(test(first + [.init(team: "ind", runs: 251, wickets: 7, balls: 450)], winner: "ind") == "IND won by 3 wickets")
        #expect(test(first + [.init(team: "ind", runs: 230, wickets: 10, balls: 450)]) == "ENG won by 20 runs")
        #expect(test(first + [.init(team: "ind", runs: 250, wickets: 10, balls: 450)]) == "Match tied")
        #expect(test(first + [.init(team: "ind", runs: 180, wickets: 6, balls: 540)]) == "Match drawn")
        // Nine down and a batter absent hurt: only the feed can say it is over.
        #expect(test(first + [.init(team: "ind", runs: 230, wickets: 9, balls: 450)], winner: "eng") == "ENG won by 20 runs")
        #expect(test(first + [.init(team: "ind", runs: 230, wickets: 9, balls: 450, target: 240)], winner: "eng") == "ENG won by 9 runs")
    }

    @Test func testWinnerWithoutDerivableMargin() {
        let innings = [Innings(team: "eng", runs: 300, wickets: 10, balls: 600), .init(team: "ind", runs: 250, wickets: 10, balls: 500)]
        #expect(test(innings, winner: "ind") == "IND won")
        #expect(test(innings) == "Match drawn")
        #expect(test([]) == "Match drawn")
    }
}

@Suite struct CricketRenderTests {
    @Test func derivedMatchesTheContractExample() throws {
        let snapshot = Fixture.chase()
        let derived = CricketRender.derived(snapshot, Fixture.score(snapshot))
        #expect(derived.innings.map(\.team) == ["csk", "mi"])
        #expect(derived.innings[1] == .init(team: "mi", runs: 87, wickets: 6, overs: "14.2", runRate: "6.07"))
        #expect(derived.target == 165)
        #expect(derived.need == .init(runs: 78, balls: 34))
        #expect(derived.result == nil)
        let json = String(decoding: try JSON.encoder().encode(Derived.cricket(derived)), as: UTF8.self)
        #expect(json.contains(#""innings":[{"overs":"20.0","runRate":"8.20","runs":164,"team":"csk","wickets":7}"#))
        #expect(json.hasSuffix(#""need":{"balls":34,"runs":78},"result":null,"target":165}"#))
    }

    @Test func derivedTargetDefaultsToFirstInningsPlusOne() {
        let snapshot = Fixture.chase(target: nil)
        let derived = CricketRender.derived(snapshot, Fixture.score(snapshot))
        #expect(derived.target == 165)
        #expect(derived.need == .init(runs: 78, balls: 34))
    }

    @Test func noNeedOutsideALiveChase() {
        let first = Fixture.snapshot(.live, CricketScore(format: .t20, innings: [.init(team: "csk", runs: 80, wickets: 2, balls: 60)]))
        #expect(CricketRender.derived(first, Fixture.score(first)).need == nil)
        #expect(CricketRender.derived(first, Fixture.score(first)).target == nil)
        let final = Fixture.chase(.completed, runs: 137, wickets: 10, balls: 118)
        let derived = CricketRender.derived(final, Fixture.score(final))
        #expect(derived.need == nil)
        #expect(derived.target == 165)
        #expect(derived.result == "CSK won by 27 runs")
        let allOutNotYetFinal = Fixture.chase(runs: 137, wickets: 10, balls: 118)
        #expect(CricketRender.derived(allOutNotYetFinal, Fixture.score(allOutNotYetFinal)).need == nil)
        let reached = Fixture.chase(runs: 166, wickets: 6, balls: 110)
        #expect(CricketRender.derived(reached, Fixture.score(reached)).need == nil)
    }

    @Test func needUsesTheInningsOwnOversLimit() {
        let snapshot = Fixture.snapshot(.live, CricketScore(format: .odi, innings: [
            .init(team: "csk", runs: 250, wickets: 7, balls: 300), .init(team: "mi", runs: 100, wickets: 2, balls: 120, target: 220, oversLimit: 40),
        ]))
        #expect(CricketRender.derived(snapshot, Fixture.score(snapshot)).need == .init(runs: 120, balls: 120))
    }

    @Test func superOverChaseNeedsItsPartnerPlusOneInSixBalls() {
        let snapshot = Fixture.snapshot(.live, CricketScore(format: .odi, innings: [
            .init(team: "nz", runs: 241, wickets: 8, balls: 300), .init(team: "eng", runs: 241, wickets: 10, balls: 300),
            .init(team: "eng", runs: 15, wickets: 0, balls: 6, superOver: true), .init(team: "nz", runs: 7, wickets: 0, balls: 2, superOver: true),
        ]), home: Fixture.nz, away: Fixture.eng)
        let derived = CricketRender.derived(snapshot, Fixture.score(snapshot))
        #expect(derived.target == 16)
        #expect(derived.need == .init(runs: 9, balls: 4))
        let state = Fixture.render(snapshot)
        #expect(state.home.score == "241/8 (50.0) · SO 7/0 (0.2)")
        #expect(state.away.score == "241 (50.0) · SO 15/0 (1.0)")
        #expect(state.summary == "NZ SO 7/0 (0.2) · Need 9 off 4")
    }

    @Test func applyFillsTheChase() {
        let state = Fixture.render(Fixture.chase())
        #expect(state.home.score == "87/6 (14.2)")
        #expect(state.away.score == "164/7 (20.0)")
        #expect(state.batting == "MI")
        #expect(state.runRate == "RR 6.07")
        #expect(state.equation == "Need 78 off 34")
        #expect(state.requiredRate == "RRR 13.76")
        #expect(state.batters == ["Tilak Varma* 12 (9)", "Rohit Sharma 45 (32)"])
        #expect(state.bowler == "J Bumrah 2/18 (3.2)")
        #expect(state.result == nil)
        #expect(state.summary == "MI 87/6 (14.2) · Need 78 off 34")
        // Left to the caller.
        #expect(state.status == "live" && state.statusText == "Live" && state.home.name == "MI" && state.event == nil)
    }

    @Test func applyBeforeTheSecondSideBats() {
        let snapshot = Fixture.snapshot(.live, CricketScore(format: .t20, innings: [.init(team: "mi", runs: 87, wickets: 6, balls: 86)]))
        let state = Fixture.render(snapshot)
        #expect(state.home.score == "87/6 (14.2)")
        #expect(state.away.score == "")
        #expect(state.equation == nil && state.requiredRate == nil && state.batters == nil && state.bowler == nil)
        #expect(state.summary == "MI 87/6 (14.2)")
    }

    @Test func applyBeforeAnyBall() {
        let state = Fixture.render(Fixture.snapshot(.scheduled, CricketScore(format: .t20, innings: [])))
        #expect(state.home.score == "" && state.away.score == "")
        #expect(state.batting == nil && state.runRate == nil)
        #expect(state.summary == "MI v CSK")
    }

    @Test func applyWhenFinal() {
        let state = Fixture.render(Fixture.chase(.completed, runs: 137, wickets: 10, balls: 118))
        #expect(state.result == "CSK won by 27 runs")
        #expect(state.summary == "CSK won by 27 runs")
        #expect(state.home.score == "137 (19.4)")
        #expect(state.batting == nil && state.equation == nil && state.requiredRate == nil)
        let abandoned = Fixture.render(Fixture.chase(.abandoned))
        #expect(abandoned.result == "No result" && abandoned.summary == "No result")
    }

    @Test func applyTestShowsBothInningsAndTheLead() {
        let innings: [CricketScore.Innings] = [
            .init(team: "eng", runs: 210, wickets: 10, balls: 400), .init(team: "ind", runs: 300, wickets: 10, balls: 600),
            .init(team: "eng", runs: 87, wickets: 6, balls: 86),
        ]
        let snapshot = Fixture.snapshot(.live, CricketScore(format: .test, innings: innings), home: Fixture.eng, away: Fixture.ind)
        let state = Fixture.render(snapshot)
        #expect(state.home.score == "210 & 87/6 (14.2)")
        #expect(state.away.score == "300 (100.0)")
        #expect(state.equation == "Trail by 3")
        #expect(state.requiredRate == nil)
        #expect(state.summary == "ENG 87/6 (14.2) · Trail by 3")
        #expect(CricketRender.derived(snapshot, Fixture.score(snapshot)).need == nil)

        var ahead = innings
        ahead[2].runs = 100
        let lead = Fixture.render(Fixture.snapshot(.live, CricketScore(format: .test, innings: ahead), home: Fixture.eng, away: Fixture.ind))
        #expect(lead.equation == "Lead by 10")

        let fourth: [CricketScore.Innings] = innings.dropLast() + [
            .init(team: "eng", runs: 250, wickets: 10, balls: 500, declared: false), .init(team: "ind", runs: 100, wickets: 2, balls: 200),
        ]
        let chase = Fixture.snapshot(.live, CricketScore(format: .test, innings: fourth), home: Fixture.eng, away: Fixture.ind)
        #expect(Fixture.render(chase).equation == "Need 61 to win")
        #expect(Fixture.render(chase).away.score == "300 & 100/2 (33.2)")
        #expect(CricketRender.derived(chase, Fixture.score(chase)).target == 161)
    }
}

@Suite struct CricketKeyEventTests {
    private func chase(runs: Int = 87, wickets: Int = 6, balls: Int = 86, batters: [CricketScore.Batter], events: [MatchEvent] = []) -> MatchSnapshot {
        var snapshot = Fixture.chase(runs: runs, wickets: wickets, balls: balls)
        snapshot.score = .cricket(CricketScore(format: .t20, innings: Fixture.score(snapshot).innings, batters: batters))
        snapshot.events = events
        return snapshot
    }

    @Test func nothingWhenNothingHappenedOrNotCricket() {
        let snapshot = Fixture.chase()
        #expect(CricketKeyEvents.detect(previous: snapshot, current: snapshot).isEmpty)
        var football = snapshot
        football.sport = .football
        football.score = .teamTotals(TeamScore(home: 1, away: 0))
        #expect(CricketKeyEvents.detect(previous: football, current: snapshot).isEmpty)
        #expect(CricketKeyEvents.detect(previous: snapshot, current: football).isEmpty)
        let single = chase(runs: 88, balls: 87, batters: [Fixture.rohit, .init(name: "Tilak Varma", runs: 13, balls: 10)])
        #expect(CricketKeyEvents.detect(previous: chase(batters: [Fixture.rohit, Fixture.tilak]), current: single).isEmpty)
    }

    @Test func wicketNamesTheBatterWhoLeft() {
        let before = chase(batters: [Fixture.rohit, Fixture.tilak])
        let after = chase(wickets: 7, balls: 87, batters: [.init(name: "Hardik Pandya", runs: 0, balls: 0, onStrike: true), Fixture.tilak])
        let events = CricketKeyEvents.detect(previous: before, current: after)
        #expect(events == [KeyEvent(kind: .wicket, title: "MI 87/7 (14.3)", body: "Rohit Sharma out for 45 (32)")])
    }

    @Test func wicketPrefersTheNewFeedEventText() {
        let old = MatchEvent(id: "e-1", type: "wicket", text: "Rayudu b Bumrah 3 (4)")
        let new = MatchEvent(id: "e-2", type: "wicket", text: "Dhoni c Rohit b Bumrah 12 (9)")
        let before = chase(batters: [Fixture.rohit, Fixture.tilak], events: [old])
        let after = chase(wickets: 7, balls: 87, batters: [Fixture.tilak], events: [old, new])
        #expect(CricketKeyEvents.detect(previous: before, current: after).map(\.body) == ["Dhoni c Rohit b Bumrah 12 (9)"])
        // An old event is not news: the batter diff names the batter instead.
        let stale = chase(wickets: 7, balls: 87, batters: [Fixture.tilak], events: [old])
        #expect(CricketKeyEvents.detect(previous: before, current: stale).map(\.body) == ["Rohit Sharma out for 45 (32)"])
        // And a new wicket event alone, without the wickets growing, is not a wicket.
        let noWicket = chase(batters: [Fixture.rohit, Fixture.tilak], events: [old, new])
        #expect(CricketKeyEvents.detect(previous: before, current: noWicket).isEmpty)
    }

    @Test func sixFromTheBattersFigures() {
        let before = chase(batters: [Fixture.rohit, Fixture.tilak])
        let after = chase(runs: 93, balls: 87, batters: [Fixture.rohit, .init(name: "Tilak Varma", runs: 18, balls: 10, onStrike: true)])
        #expect(CricketKeyEvents.detect(previous: before, current: after) == [KeyEvent(kind: .six, title: "MI 93/6 (14.3)", body: "Tilak Varma hits a six")])
        // Six runs off two balls is not a six.
        let twoBalls = chase(runs: 93, balls: 88, batters: [Fixture.rohit, .init(name: "Tilak Varma", runs: 18, balls: 11)])
        #expect(CricketKeyEvents.detect(previous: before, current: twoBalls).isEmpty)
    }

    @Test func sixFromAFeedEvent() {
        let before = chase(batters: [Fixture.rohit, Fixture.tilak])
        let event = MatchEvent(id: "e-5", type: "six", text: "Tilak Varma six over long-on")
        let after = chase(runs: 93, balls: 88, batters: [Fixture.rohit, .init(name: "Tilak Varma", runs: 18, balls: 11)], events: [event])
        #expect(CricketKeyEvents.detect(previous: before, current: after).map(\.body) == ["Tilak Varma six over long-on"])
    }

    @Test func fiftyAndHundredWhenCrossed() {
        let before = chase(batters: [.init(name: "Rohit Sharma", runs: 48, balls: 32), .init(name: "Tilak Varma", runs: 97, balls: 60)])
        let after = chase(runs: 94, balls: 88, batters: [.init(name: "Rohit Sharma", runs: 52, balls: 33), .init(name: "Tilak Varma", runs: 100, balls: 61)])
        let events = CricketKeyEvents.detect(previous: before, current: after)
        #expect(events.map(\.kind) == [.fifty, .hundred])
        #expect(events.map(\.body) == ["Fifty for Rohit Sharma, 52 (33)", "Hundred for Tilak Varma, 100 (61)"])
        #expect(events.allSatisfy { $0.title == "MI 94/6 (14.4)" })
        // Already past fifty: no second alert.
        #expect(CricketKeyEvents.detect(previous: after, current: after).isEmpty)
    }

    @Test func inningsEndWhenTheNextBegins() {
        let first = Fixture.snapshot(.live, CricketScore(format: .t20, innings: [.init(team: "csk", runs: 160, wickets: 7, balls: 119)]))
        let second = Fixture.snapshot(.live, CricketScore(format: .t20, innings: [
            .init(team: "csk", runs: 164, wickets: 7, balls: 120), .init(team: "mi", runs: 0, wickets: 0, balls: 0),
        ]))
        #expect(CricketKeyEvents.detect(previous: first, current: second) == [
            KeyEvent(kind: .inningsEnd, title: "CSK 164/7 (20.0)", body: "MI need 165 to win"),
        ])
        #expect(CricketKeyEvents.detect(previous: second, current: second).isEmpty)
    }

    @Test func inningsEndAtTheOversLimitIsReportedOnce() {
        let before = Fixture.snapshot(.live, CricketScore(format: .t20, innings: [.init(team: "csk", runs: 160, wickets: 7, balls: 119)]))
        let after = Fixture.snapshot(.break, CricketScore(format: .t20, innings: [.init(team: "csk", runs: 164, wickets: 7, balls: 120)]))
        #expect(CricketKeyEvents.detect(previous: before, current: after).map(\.kind) == [.inningsEnd])
        let next = Fixture.snapshot(.live, CricketScore(format: .t20, innings: [
            .init(team: "csk", runs: 164, wickets: 7, balls: 120), .init(team: "mi", runs: 4, wickets: 0, balls: 1),
        ]))
        #expect(CricketKeyEvents.detect(previous: after, current: next).isEmpty)
    }

    @Test func allOrderedWicketSixFiftyInningsEnd() {
        let before = Fixture.snapshot(.live, CricketScore(format: .t20, innings: [.init(team: "csk", runs: 150, wickets: 9, balls: 115)], batters: [
            .init(name: "MS Dhoni", runs: 44, balls: 20), .init(name: "Deepak Chahar", runs: 2, balls: 3),
        ]))
        let after = Fixture.snapshot(.break, CricketScore(format: .t20, innings: [.init(team: "csk", runs: 156, wickets: 10, balls: 117)], batters: [
            .init(name: "MS Dhoni", runs: 50, balls: 21),
        ]))
        let events = CricketKeyEvents.detect(previous: before, current: after)
        #expect(events.map(\.kind) == [.wicket, .six, .fifty, .inningsEnd])
        #expect(events.map(\.title) == Array(repeating: "CSK 156 (19.3)", count: 4))
        #expect(events[0].body == "Deepak Chahar out for 2 (3)")
    }

    @Test func lastWicketSeenOnlyAfterTheNextInningsBeganReadsAllOut() {
        let before = Fixture.snapshot(.live, CricketScore(format: .t20, innings: [.init(team: "csk", runs: 150, wickets: 9, balls: 115)]))
        let after = Fixture.snapshot(.live, CricketScore(format: .t20, innings: [
            .init(team: "csk", runs: 150, wickets: 10, balls: 116), .init(team: "mi", runs: 0, wickets: 0, balls: 0),
        ]))
        #expect(CricketKeyEvents.detect(previous: before, current: after) == [
            KeyEvent(kind: .wicket, title: "CSK 150 (19.2)", body: "All out"),
            KeyEvent(kind: .inningsEnd, title: "CSK 150 (19.2)", body: "MI need 151 to win"),
        ])
    }

    @Test func correctionThatDropsAnInningsAlertsNothing() {
        let before = Fixture.chase()
        let after = Fixture.snapshot(.live, CricketScore(format: .t20, innings: [.init(team: "csk", runs: 164, wickets: 10, balls: 120)]))
        #expect(CricketKeyEvents.detect(previous: before, current: after).isEmpty)
    }
}
