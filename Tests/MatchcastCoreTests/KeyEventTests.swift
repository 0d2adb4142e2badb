import Foundation
import MatchcastTesting
import Testing
@testable import MatchcastCore

// Key moments between two renderings, and the tracker that feeds them to the lifecycle.

private enum KeyEventFixture {
    static let mun = Team(id: "mun", name: "Manchester United", short: "MUN")
    static let liv = Team(id: "liv", name: "Liverpool", short: "LIV")

    static func totals(
        _ sport: Sport, _ status: MatchStatus, _ home: Int, _ away: Int, clock: String = "67'", events: [MatchEvent] = []
    ) -> MatchSnapshot {
        MatchSnapshot(id: "m-1", sport: sport, status: status, home: mun, away: liv,
                      score: .teamTotals(TeamScore(home: home, away: away, period: "2H", clock: clock)), events: events)
    }

    static func baseball(_ status: MatchStatus, _ home: Int, _ away: Int) -> MatchSnapshot {
        MatchSnapshot(id: "mlb-1", sport: .baseball, status: status,
                      home: Team(id: "bos", name: "Boston Red Sox", short: "BOS"),
                      away: Team(id: "nyy", name: "New York Yankees", short: "NYY"),
                      score: .baseball(BaseballScore(home: home, away: away, inning: 3, half: .bottom, outs: 2, bases: [false, false, false])))
    }

    static func tennis(_ points: String, _ status: MatchStatus = .live) -> MatchSnapshot {
        MatchSnapshot(id: "atp-1", sport: .tennis, status: status,
                      home: Team(id: "alc", name: "Carlos Alcaraz", short: "ALC"),
                      away: Team(id: "sin", name: "Jannik Sinner", short: "SIN"),
                      score: .tennis(TennisScore(rules: TennisRules(bestOf: 3, firstServer: .home, finalSetTiebreak: 7), points: points)))
    }

    static func game(_ winner: Side) -> String { winner == .home ? "HHHH" : "AAAA" }
    static func holds(_ count: Int) -> String { (0..<count).map { game($0 % 2 == 0 ? .home : .away) }.joined() }

    static func detect(_ previous: MatchSnapshot?, _ current: MatchSnapshot) throws -> [KeyEvent] {
        try KeyEventDetector.detect(previous: previous.map { try MatchRenderer.render($0) }, current: MatchRenderer.render(current))
    }
}

@Suite("Key event detector")
struct KeyEventTests {
    fileprivate typealias F = KeyEventFixture

    @Test func matchStartWhenAScheduledMatchGoesLive() throws {
        let now = F.totals(.football, .live, 0, 0, clock: "1'")
        let events = try F.detect(F.totals(.football, .scheduled, 0, 0), now)
        #expect(events.map(\.kind) == [.matchStart])
        #expect(events.first?.body == "Manchester United v Liverpool has started")
        #expect(events.first?.title == "MUN 0-0 LIV · 2H 1'")
    }

    @Test func matchStartOnTheFirstSightingOnlyWhenInProgress() throws {
        #expect(try F.detect(nil, F.totals(.football, .live, 0, 0)).map(\.kind) == [.matchStart])
        #expect(try F.detect(nil, F.totals(.football, .break, 1, 0)).map(\.kind) == [.matchStart])
        #expect(try F.detect(nil, F.totals(.football, .scheduled, 0, 0)).isEmpty)
        #expect(try F.detect(nil, F.totals(.football, .completed, 2, 1)).isEmpty)
    }

    @Test func noStartWhenResumingFromABreak() throws {
        #expect(try F.detect(F.totals(.football, .break, 1, 0), F.totals(.football, .live, 1, 0)).isEmpty)
        #expect(try F.detect(F.totals(.football, .live, 1, 0), F.totals(.football, .break, 1, 0)).isEmpty)
    }

    @Test func goalUsesTheFeedsOwnWordsForASingleNewGoal() throws {
        let scorer = MatchEvent(id: "e-1", type: "goal", text: "GOAL! Rashford 23'")
        let events = try F.detect(F.totals(.football, .live, 0, 0), F.totals(.football, .live, 1, 0, events: [scorer]))
        #expect(events.map(\.kind) == [.goal])
        #expect(events.first?.body == "GOAL! Rashford 23'")
        #expect(events.first?.title == "MUN 1-0 LIV · 2H 67'")
        // Without a new feed event, our own words.
        let plain = try F.detect(F.totals(.football, .live, 0, 0), F.totals(.football, .live, 1, 0))
        #expect(plain.map(\.body) == ["Goal! Manchester United"])
    }

    @Test func goalsForBothSidesAndSeveralAtOnce() throws {
        let events = try F.detect(F.totals(.football, .live, 0, 0), F.totals(.football, .live, 2, 1))
        #expect(events.map(\.kind) == [.goal, .goal])
        #expect(events.map(\.body) == ["2 goals for Manchester United", "Goal! Liverpool"])
    }

    /// The detail must describe the goal just scored, not the last one the feed listed earlier.
    @Test func goalDetailNeverComesFromAnOldFeedEvent() throws {
        let old = MatchEvent(id: "e-1", type: "goal", text: "Rashford 23'")
        let before = F.totals(.football, .live, 1, 0, events: [old])
        let after = F.totals(.football, .live, 1, 1, events: [old])  // feed has not listed Liverpool's scorer yet
        let events = try F.detect(before, after)
        #expect(events.map(\.kind) == [.goal])
        #expect(events.first?.body == "Goal! Liverpool", "got \(events.first?.body ?? "nil")")
    }

    @Test func hockeyGoalAndAmericanFootballScore() throws {
        #expect(try F.detect(F.totals(.hockey, .live, 0, 0), F.totals(.hockey, .live, 0, 1)).map(\.body) == ["Goal! Liverpool"])
        let football = try F.detect(F.totals(.americanFootball, .live, 7, 0), F.totals(.americanFootball, .live, 14, 0))
        #expect(football.map(\.kind) == [.score])
        #expect(football.map(\.body) == ["Manchester United score"])
    }

    @Test func baseballRun() throws {
        let one = try F.detect(F.baseball(.live, 0, 0), F.baseball(.live, 1, 0))
        #expect(one.map(\.kind) == [.run])
        #expect(one.map(\.body) == ["Boston Red Sox score"])
        let three = try F.detect(F.baseball(.live, 1, 0), F.baseball(.live, 1, 3))
        #expect(three.map(\.body) == ["New York Yankees score 3"])
        #expect(try F.detect(F.baseball(.live, 1, 3), F.baseball(.live, 1, 3)).isEmpty)
    }

    @Test func basketballScoringIsNotAnEventButStartAndEndAre() throws {
        #expect(try F.detect(F.totals(.basketball, .live, 50, 48), F.totals(.basketball, .live, 53, 50)).isEmpty)
        #expect(try F.detect(F.totals(.basketball, .scheduled, 0, 0), F.totals(.basketball, .live, 2, 0)).map(\.kind) == [.matchStart])
        let end = try F.detect(F.totals(.basketball, .live, 101, 99), F.totals(.basketball, .completed, 101, 100))
        #expect(end.map(\.kind) == [.matchEnd])
        #expect(end.first?.body == "Manchester United won 101-100")
    }

    @Test func endOnFinalCarriesTheResult() throws {
        let events = try F.detect(F.totals(.football, .live, 2, 1), F.totals(.football, .completed, 2, 1))
        #expect(events.map(\.kind) == [.matchEnd])
        #expect(events.first?.body == "Manchester United won 2-1")
        #expect(events.first?.title == "MUN 2-1 LIV")
        let abandoned = try F.detect(F.totals(.football, .live, 0, 0), F.totals(.football, .abandoned, 0, 0))
        #expect(abandoned.map(\.body) == ["Abandoned"])
        #expect(try F.detect(F.totals(.football, .completed, 2, 1), F.totals(.football, .completed, 2, 1)).isEmpty)
    }

    @Test func lateGoalAndFinalTogetherKeepTheirOrder() throws {
        let events = try F.detect(F.totals(.football, .live, 1, 1), F.totals(.football, .completed, 2, 1))
        #expect(events.map(\.kind) == [.goal, .matchEnd])
    }

    // MARK: Tennis

    @Test func tennisBreakOfServe() throws {
        // Home serves the first game; away wins it.
        let events = try F.detect(F.tennis("AAA"), F.tennis("AAAA"))
        #expect(events.map(\.kind) == [.breakOfServe])
        #expect(events.first?.body == "Break of serve: Jannik Sinner")
        #expect(try F.detect(F.tennis("HHH"), F.tennis("HHHH")).isEmpty)
    }

    @Test func tennisSetWonOnABreak() throws {
        let before = F.holds(8) + F.game(.home) + "HHH"
        let events = try F.detect(F.tennis(before), F.tennis(before + "H"))
        #expect(events.map(\.kind) == [.breakOfServe, .setWon])
        #expect(events.last?.body == "Set Carlos Alcaraz")
        #expect(events.last?.title == "6-4 0-0 · 0-0")
    }

    @Test func tennisMatchWonWithoutASeparateMatchEnd() throws {
        let before = String(repeating: "HHHH", count: 11) + "HHH"
        for status in [MatchStatus.live, .completed] {
            let events = try F.detect(F.tennis(before), F.tennis(before + "H", status))
            #expect(events.contains { $0.kind == .matchWon }, "\(status)")
            #expect(!events.contains { $0.kind == .matchEnd || $0.kind == .setWon }, "\(status)")
            #expect(events.first { $0.kind == .matchWon }?.body == "Game, set and match Carlos Alcaraz")
        }
    }

    @Test func tennisCompletedWithoutTheLastPointStillEnds() throws {
        // A retirement: the feed goes final with the point sequence unchanged.
        let points = F.holds(3)
        let events = try F.detect(F.tennis(points), F.tennis(points, .completed))
        #expect(events.map(\.kind) == [.matchEnd])
    }
}

@Suite("Match tracker")
struct MatchTrackerTests {
    fileprivate typealias F = KeyEventFixture

    @Test func identicalSnapshotTwiceGivesNothingTheSecondTime() throws {
        var tracker = MatchTracker()
        let snapshot = F.totals(.football, .live, 1, 0)
        let first = try #require(try tracker.ingest(snapshot, pollInterval: .seconds(5)))
        #expect(first.keyEvents.map(\.kind) == [.matchStart])
        #expect(try tracker.ingest(snapshot, pollInterval: .seconds(7)) == nil)
        // The poll interval still reaches activities that join later.
        #expect(tracker.latest?.pollInterval == .seconds(7))
        #expect(tracker.latest?.content == first.content)
    }

    @Test func firstSnapshotOfAScheduledMatchIsAnUpdateWithoutEvents() throws {
        var tracker = MatchTracker()
        let update = try #require(try tracker.ingest(F.totals(.football, .scheduled, 0, 0), pollInterval: .seconds(60)))
        #expect(update.keyEvents.isEmpty)
        #expect(update.alert == nil)
        #expect(update.content.event == nil)
        #expect(update.status == .scheduled)
    }

    @Test func eventTextIsStickyAcrossRoutineUpdates() throws {
        var tracker = MatchTracker()
        _ = try tracker.ingest(F.totals(.football, .live, 0, 0, clock: "22'"), pollInterval: .seconds(5))
        let goal = try #require(try tracker.ingest(F.totals(.football, .live, 1, 0, clock: "23'"), pollInterval: .seconds(5)))
        #expect(goal.keyEvents.map(\.kind) == [.goal])
        #expect(goal.content.event == "Goal! Manchester United")
        #expect(goal.alert == APS.Alert(title: "MUN 1-0 LIV · 2H 23'", body: "Goal! Manchester United"))

        let routine = try #require(try tracker.ingest(F.totals(.football, .live, 1, 0, clock: "24'"), pollInterval: .seconds(5)))
        #expect(routine.keyEvents.isEmpty)
        #expect(routine.content.event == "Goal! Manchester United")
        #expect(routine.content.clock == "24'")
        #expect(try tracker.ingest(F.totals(.football, .live, 1, 0, clock: "24'"), pollInterval: .seconds(5)) == nil)

        let equaliser = try #require(try tracker.ingest(F.totals(.football, .live, 1, 1, clock: "30'"), pollInterval: .seconds(5)))
        #expect(equaliser.content.event == "Goal! Liverpool")
    }

    @Test func severalKeyEventsMakeOneAlert() throws {
        var tracker = MatchTracker()
        _ = try tracker.ingest(F.totals(.football, .live, 1, 1), pollInterval: .seconds(5))
        let update = try #require(try tracker.ingest(F.totals(.football, .completed, 2, 1), pollInterval: .seconds(5)))
        #expect(update.alert?.title == "MUN 2-1 LIV")
        #expect(update.alert?.body == "Goal! Manchester United · Manchester United won 2-1")
        #expect(update.content.event == "Manchester United won 2-1")
    }

    @Test func badScoreThrowsAndLeavesTheTrackerAsItWas() throws {
        var tracker = MatchTracker()
        _ = try tracker.ingest(F.tennis("HHHH"), pollInterval: .seconds(5))
        let before = tracker
        #expect(throws: InputError.self) { try tracker.ingest(F.tennis(String(repeating: "HHHH", count: 13)), pollInterval: .seconds(5)) }
        #expect(tracker == before)
    }
}
