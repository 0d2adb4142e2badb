import Foundation
import Testing
@testable import MatchcastCore

// `LiveSurface.Progress` from content-states the real renderer made (docs/formats.md, "Live surface").

@Suite("Live surface progress")
struct LiveSurfaceProgressTests {
    typealias F = SurfaceFixture
    typealias Progress = LiveSurface.Progress

    // MARK: Cricket

    @Test func t20ChaseIsTwoInningsOf120Balls() throws {
        let progress = try #require(try F.progress(F.t20Chase))
        #expect(progress.unit == .balls)
        #expect(progress.segments == [20 * 6, 20 * 6])
        // The first innings is complete; the chase has bowled 14.2 overs.
        #expect(progress.position == 120 + 14 * 6 + 2)
        #expect(progress.points == [120])
        #expect(!progress.isComplete)
    }

    @Test func odiChaseIsTwoInningsOf300Balls() throws {
        let snapshot = F.cricket(format: .odi, innings: [
            .init(team: "mi", runs: 281, wickets: 7, balls: 300),
            .init(team: "csk", runs: 150, wickets: 3, balls: 151),
        ])
        let progress = try #require(try F.progress(snapshot))
        #expect(progress.segments == [300, 300])
        #expect(progress.position == 300 + 151)
        #expect(progress.points == [300])
    }

    @Test func firstInningsAllOutEarlyStillCountsAsAWholeInnings() throws {
        let snapshot = F.cricket(innings: [
            .init(team: "mi", runs: 98, wickets: 10, balls: 15 * 6),
            .init(team: "csk", runs: 40, wickets: 1, balls: 30),
        ])
        let progress = try #require(try F.progress(snapshot))
        #expect(progress.segments == [120, 120])
        #expect(progress.position == 120 + 30)
    }

    @Test func chaseShortenedByRainKeepsTheLongerFirstInnings() throws {
        let snapshot = F.cricket(innings: [
            .init(team: "mi", runs: 180, wickets: 5, balls: 120),
            .init(team: "csk", runs: 50, wickets: 2, balls: 60, target: 150, oversLimit: 17),
        ])
        let progress = try #require(try F.progress(snapshot))
        #expect(progress.segments == [120, 17 * 6])
        #expect(progress.position == 120 + 60)
    }

    @Test func firstInningsAndTheBreakAfterItHaveNoProgress() throws {
        // The overs limit is not in the content-state: a T20 and an ODI first innings read alike.
        let first = F.cricket(innings: [.init(team: "mi", runs: 87, wickets: 2, balls: 60)])
        #expect(try F.state(first).runRate != nil)
        #expect(try F.progress(first) == nil)
        let inningsBreak = F.cricket(.break, innings: [.init(team: "mi", runs: 206, wickets: 4, balls: 120)])
        #expect(try F.state(inningsBreak).statusText == "Innings break")
        #expect(try F.progress(inningsBreak) == nil)
    }

    @Test func testsAndSuperOversHaveNoProgress() throws {
        let fourthInnings = F.cricket(format: .test, innings: [
            .init(team: "mi", runs: 350, wickets: 10, balls: 600),
            .init(team: "csk", runs: 300, wickets: 10, balls: 550),
            .init(team: "mi", runs: 200, wickets: 10, balls: 400),
            .init(team: "csk", runs: 100, wickets: 3, balls: 200),
        ])
        #expect(try F.state(fourthInnings).equation == "Need 151 to win")
        #expect(try F.progress(fourthInnings) == nil)

        let superOver = F.cricket(innings: [
            .init(team: "mi", runs: 150, wickets: 5, balls: 120),
            .init(team: "csk", runs: 150, wickets: 8, balls: 120),
            .init(team: "mi", runs: 12, wickets: 1, balls: 6, superOver: true),
            .init(team: "csk", runs: 8, wickets: 0, balls: 3, superOver: true),
        ])
        #expect(try F.state(superOver).equation == "Need 5 off 3")
        #expect(try F.progress(superOver) == nil)
    }

    @Test func chaseWithoutTheSportKnownIsToldByTheCricketFields() throws {
        #expect(try F.progress(F.t20Chase, sportKnown: false) == F.progress(F.t20Chase))
    }

    @Test func completedCricketIsOneFullSegment() throws {
        let done = F.cricket(.completed, innings: [
            .init(team: "mi", runs: 206, wickets: 4, balls: 120),
            .init(team: "csk", runs: 179, wickets: 10, balls: 112),
        ])
        #expect(try F.state(done).result == "MI won by 27 runs")
        let progress = try #require(try F.progress(done))
        #expect(progress.unit == .match)
        #expect(progress.segments == [1])
        #expect(progress.isComplete)
    }

    // MARK: Tennis

    @Test func bestOfFiveMidSetOnceTheSetsSayItsBestOfFive() throws {
        // 6-0 0-6 6-0, 2-1 in the fourth, 30-15: a side with two sets and the match not over.
        let snapshot = F.tennis(F.tennisSets([.home, .away, .home], then: [.home, .home, .away], points: "HHA"), bestOf: 5)
        #expect(try F.state(snapshot).sets == "6-0 0-6 6-0 2-1")
        let progress = try #require(try F.progress(snapshot))
        #expect(progress.unit == .sets)
        #expect(progress.segments == [1, 1, 1, 1, 1])
        #expect(progress.position == 3)
        #expect(progress.points == [1, 2, 3])
    }

    @Test func suspendedBestOfFiveAtTwoSetsToLove() throws {
        let snapshot = F.tennis(F.tennisSets([.home, .home], then: [.away]), bestOf: 5, status: .break)
        let progress = try #require(try F.progress(snapshot))
        #expect(progress.segments.count == 5)
        #expect(progress.position == 2)
    }

    @Test func undecidedMatchWhoseBestOfCannotBeToldHasNoProgress() throws {
        // One set each way or fewer: best of 3 and best of 5 read alike.
        let bestOfThree = F.tennis(F.tennisSets([.home], then: [.away, .away], points: "HHA"), bestOf: 3)
        #expect(try F.state(bestOfThree).sets == "6-0 0-2")
        #expect(try F.progress(bestOfThree) == nil)
        let bestOfFive = F.tennis(F.tennisSets([.home], then: [.away, .away], points: "HHA"), bestOf: 5)
        #expect(try F.progress(bestOfFive) == nil)
        #expect(try F.progress(F.tennis("HHA", bestOf: 3)) == nil)
    }

    @Test func finishedMatchesAreFullBarsOfTheirBestOf() throws {
        let three = F.tennis(F.tennisSets([.home, .away, .home]), bestOf: 3, status: .completed)
        #expect(try F.state(three).result == "Carlos Alcaraz won 6-0 0-6 6-0")
        let threeProgress = try #require(try F.progress(three))
        #expect(threeProgress.segments == [1, 1, 1])
        #expect(threeProgress.isComplete)
        #expect(threeProgress.points == [1, 2])

        let five = F.tennis(F.tennisSets([.away, .away, .home, .away]), bestOf: 5, status: .completed)
        let fiveProgress = try #require(try F.progress(five))
        #expect(fiveProgress.segments == [1, 1, 1, 1, 1])
        #expect(fiveProgress.isComplete)

        // Decided on points while the feed still says live: the bar is full all the same.
        let lagging = F.tennis(F.tennisSets([.home, .home]), bestOf: 3, status: .live)
        #expect(try F.progress(lagging)?.isComplete == true)
    }

    @Test func tennisWithoutTheSportKnownIsToldByItsSets() throws {
        let snapshot = F.tennis(F.tennisSets([.home, .away, .home], then: [.home]), bestOf: 5)
        #expect(try F.progress(snapshot, sportKnown: false) == F.progress(snapshot))
        #expect(try F.progress(snapshot, sportKnown: false) != nil)
    }

    // MARK: Football

    @Test func footballFirstHalfSecondHalfHalfTimeAndFullTime() throws {
        let first = try #require(try F.progress(F.football(period: "1H", clock: "23'")))
        #expect(first.unit == .minutes)
        #expect(first.segments == [45, 45])
        #expect(first.position == 23)
        #expect(first.points.isEmpty)

        let second = try #require(try F.progress(F.football(period: "2H", clock: "67'")))
        #expect(second.position == 67)
        #expect(second.points == [45])

        let halfTime = try #require(try F.progress(F.football(.break, period: "HT")))
        #expect(try F.state(F.football(.break, period: "HT")).statusText == "Half-time")
        #expect(halfTime.position == 45)
        #expect(halfTime.points == [45])

        let fullTime = try #require(try F.progress(F.football(.completed, period: "FT")))
        #expect(fullTime.segments == [45, 45])
        #expect(fullTime.position == 90)
        #expect(fullTime.isComplete)
    }

    @Test func stoppageTimeStaysAtTheEndOfItsHalf() throws {
        #expect(try F.progress(F.football(period: "1H", clock: "45+2'"))?.position == 45)
        #expect(try F.progress(F.football(period: "1H", clock: "45'+3'"))?.position == 45)
        #expect(try F.progress(F.football(period: "2H", clock: "90+4'"))?.position == 90)
        #expect(try F.progress(F.football(period: "2H", clock: "130'"))?.position == 90)
    }

    @Test func extraTimeAddsTwoSegmentsOfFifteen() throws {
        let progress = try #require(try F.progress(F.football(period: "ET", clock: "105'")))
        #expect(progress.segments == [45, 45, 15, 15])
        #expect(progress.position == 105)
        #expect(progress.points == [45, 90, 105])
        #expect(try F.progress(F.football(period: "PEN")) == nil)
    }

    @Test func footballWithoutTheSportKnownHasNoProgress() throws {
        // A period and a clock alone do not say which sport, or how long its periods are.
        #expect(try F.progress(F.football(period: "2H", clock: "67'"), sportKnown: false) == nil)
    }

    // MARK: Baseball

    @Test func baseballTopAndBottomOfTheSeventh() throws {
        let top = try #require(try F.progress(F.baseball(inning: 7, half: .top, outs: 1)))
        #expect(try F.state(F.baseball(inning: 7, half: .top, outs: 1)).inning == "Top 7th")
        #expect(top.unit == .outs)
        #expect(top.segments == Array(repeating: 6, count: 9))
        // Six innings of six outs done, and one out in the top of the seventh.
        #expect(top.position == 6 * 6 + 1)
        #expect(top.points == [6, 12, 18, 24, 30, 36])

        let bottom = try #require(try F.progress(F.baseball(inning: 7, half: .bottom, outs: 2)))
        #expect(bottom.position == 6 * 6 + 3 + 2)
    }

    @Test func extraInningsAddASegmentAndTheFinalIsFull() throws {
        let extra = try #require(try F.progress(F.baseball(inning: 11, half: .top, outs: 0)))
        #expect(extra.segments.count == 11)
        #expect(extra.position == 10 * 6)
        let final = try #require(try F.progress(F.baseball(.completed, inning: 9, half: .bottom, outs: 3)))
        #expect(final.segments == Array(repeating: 6, count: 9))
        #expect(final.isComplete)
        #expect(try F.progress(F.baseball(inning: 3, half: .top, outs: 0), sportKnown: false)?.position == 12)
    }

    // MARK: Hockey, American football, basketball

    @Test func hockeyClockCountsDownThePeriod() throws {
        let progress = try #require(try F.progress(F.totals(.hockey, period: "P2", clock: "04:12")))
        #expect(progress.segments == [20, 20, 20])
        #expect(progress.position == 20 + (20 * 60 - (4 * 60 + 12)) / 60)
        #expect(progress.points == [20])
        #expect(try F.progress(F.totals(.hockey, .break, period: "P1"))?.position == 20)
        #expect(try F.progress(F.totals(.hockey, period: "P3"))?.position == 40)
        #expect(try F.progress(F.totals(.hockey, period: "OT", clock: "03:00")) == nil)
        #expect(try F.progress(F.totals(.hockey, .completed, period: "F/OT"))?.isComplete == true)
    }

    @Test func americanFootballQuartersOfFifteen() throws {
        let progress = try #require(try F.progress(F.totals(.americanFootball, period: "Q4", clock: "2:00")))
        #expect(progress.segments == [15, 15, 15, 15])
        #expect(progress.position == 45 + 13)
        #expect(progress.points == [15, 30, 45])
        #expect(try F.progress(F.totals(.americanFootball, .break, period: "HT"))?.position == 30)
    }

    @Test func basketballCountsWholePeriods() throws {
        let quarters = try #require(try F.progress(F.totals(.basketball, period: "Q3", clock: "05:00")))
        #expect(quarters.unit == .periods)
        #expect(quarters.segments == [1, 1, 1, 1])
        #expect(quarters.position == 2)
        #expect(try F.progress(F.totals(.basketball, .break, period: "Q3"))?.position == 3)
        let halves = try #require(try F.progress(F.totals(.basketball, period: "2H", clock: "12:00")))
        #expect(halves.segments == [1, 1])
        #expect(halves.position == 1)
        // Half-time of four quarters or of two halves: which, the label does not say.
        #expect(try F.progress(F.totals(.basketball, .break, period: "HT")) == nil)
        let final = try #require(try F.progress(F.totals(.basketball, .completed, period: "F")))
        #expect(final.unit == .match)
        #expect(final.isComplete)
    }

    // MARK: Status

    @Test func scheduledPostponedAndAbandonedHaveNone() throws {
        for status in [MatchStatus.scheduled, .postponed, .abandoned] {
            #expect(try F.progress(F.football(status, period: "2H", clock: "67'")) == nil)
            #expect(try F.progress(F.baseball(status, inning: 7, half: .top, outs: 1)) == nil)
        }
        var state = try F.state(F.football(period: "2H", clock: "67'"))
        state.status = "paused"
        #expect(Progress(contentState: state, sport: .football) == nil)
    }

    // MARK: Odd strings

    static let oddPeriods = [
        "", " ", "Half 2", "2nd half", "Q0", "Q5", "P0", "P4", "1H2", "HT?", "💥", "Ｑ１", "Q-1", "Q१", "3H",
        "P99999999999999999999999", String(repeating: "Q", count: 10_000), "\u{0}", "1\u{301}H", "OT", "2OT", "SO",
        "F", "FT", "AET", "E T",
    ]

    @Test(arguments: [Sport.football, .hockey, .americanFootball, .basketball])
    func oddPeriodsGiveNoProgress(sport: Sport) throws {
        for period in Self.oddPeriods {
            for clock in [nil, "04:12", "67'"] {
                let progress = try F.progress(F.totals(sport, period: period, clock: clock))
                #expect(progress == nil, "\(sport) \(period.prefix(20)) \(clock ?? "-")")
            }
        }
    }

    @Test func oddClocksLeaveThePositionAtThePeriodsStart() throws {
        let odd = ["banana", "99:99", "-5'", "45+", "00:75", "99999999999999999999'", "🕐", "12:3", "1:2:3", "'", "", "25:00"]
        for clock in odd {
            #expect(try F.progress(F.football(period: "2H", clock: clock))?.position == 45, "\(clock)")
            #expect(try F.progress(F.totals(.hockey, period: "P2", clock: clock))?.position == 20, "\(clock)")
            #expect(try F.progress(F.totals(.americanFootball, period: "Q2", clock: clock))?.position == 15, "\(clock)")
        }
    }

    @Test func oddCricketTennisAndBaseballStringsGiveNoProgress() {
        let live = ContentState(status: "live", statusText: "Live", home: .init(name: "MI", score: "206/4 (20.0)"),
                                away: .init(name: "CSK", score: "87/6 (14.2)"), summary: "")
        var cricket = live
        cricket.batting = "CSK"
        for equation in ["Need 5 off -3", "Need off 3", "Need 5 off 99999999", "Need 5 off 35", "Need 5 to win", "", "Need 5 off 34 ", "Need ５ off 34"] {
            cricket.equation = equation
            #expect(Progress(contentState: cricket, sport: .cricket) == nil, "\(equation)")
        }
        cricket.equation = "Need 120 off 34"
        for score in ["87/6 (14.9)", "87/6 (.)", ")", "(", "87/6 (14.2", "87/6 (999999.2)", "(14.2)x"] {
            cricket.away.score = score
            #expect(Progress(contentState: cricket, sport: .cricket) == nil, "\(score)")
        }
        cricket.away.score = "87/6 (14.2)"
        cricket.batting = "MI"
        cricket.away.name = "MI"
        #expect(Progress(contentState: cricket, sport: .cricket) == nil, "both sides named alike")

        var tennis = live
        for sets in ["6-4 7-", "a-b", "6-4(", "((", "-", "6-4 6-4 6-4 6-4 6-4 6-4", "6-6 6-6 6-6 1-0", "6-4(5 6-3"] {
            tennis.sets = sets
            #expect(Progress(contentState: tennis, sport: .tennis) == nil, "\(sets)")
        }

        var baseball = live
        for inning in ["Top 0th", "Top 100th", "Bot 7", "Middle 7th", "Top 7st", "top 7th", "Top  7th", "Top 7th extra"] {
            baseball.inning = inning
            #expect(Progress(contentState: baseball, sport: .baseball) == nil, "\(inning)")
        }
        baseball.inning = "Top 7th"
        baseball.outs = "7 outs"
        #expect(Progress(contentState: baseball, sport: .baseball)?.position == 36, "unreadable outs count as none")
    }

    @Test func randomStringsNeverCrashAndAnyBarIsDrawable() {
        var rng = SeededGenerator(seed: 0x5EED)
        let pieces = ["Q", "P", "H", "1", "2", "4", "9", ":", "'", "+", "(", ")", ".", "-", " ", "Top", "Bot", "Need", "off",
                      "th", "outs", "SO", "💥", "é", "0", "5", "/"]
        func noise() -> String {
            (0..<Int.random(in: 0...6, using: &rng)).map { _ in pieces.randomElement(using: &rng)! }.joined()
        }
        for _ in 0..<3000 {
            var state = ContentState(status: ["live", "break", "completed"].randomElement(using: &rng)!, statusText: "",
                                     home: .init(name: "MI", score: noise()), away: .init(name: "CSK", score: noise()), summary: "")
            state.period = noise()
            state.clock = noise()
            state.sets = Bool.random(using: &rng) ? noise() : nil
            state.inning = noise()
            state.outs = noise()
            state.equation = noise()
            state.batting = Bool.random(using: &rng) ? "CSK" : "MI"
            state.result = Bool.random(using: &rng) ? noise() : nil
            for sport in Sport.allCases + [nil] {
                guard let progress = Progress(contentState: state, sport: sport) else { continue }
                #expect(progress.total > 0)
                #expect((0...progress.total).contains(progress.position))
                #expect(progress.points.allSatisfy { $0 > 0 && $0 < progress.total })
            }
        }
    }

    // MARK: The bar itself

    @Test func aBarIsAlwaysDrawable() {
        let bar = Progress(unit: .minutes, segments: [-5, 0, 45, Int.max, 45], position: Int.max, points: [-1, 0, 45, 45, Int.max])
        #expect(bar.segments == [45, Progress.maxSegmentLength, 45])
        #expect(bar.position == bar.total)
        #expect(bar.points == [45])
        let empty = Progress(unit: .sets, segments: [], position: -3)
        #expect(empty.segments == [1])
        #expect(empty.position == 0)
        let many = Progress(unit: .outs, segments: Array(repeating: Int.max, count: 10_000), position: 0)
        #expect(many.segments.count == Progress.maxSegments)
    }

    @Test func decodingGoesThroughTheSameChecks() throws {
        let json = #"{"unit":"balls","segments":[9223372036854775807,9223372036854775807],"position":-4,"points":[3]}"#
        let bar = try JSON.decoder().decode(Progress.self, from: Data(json.utf8))
        #expect(bar.segments == [Progress.maxSegmentLength, Progress.maxSegmentLength])
        #expect(bar.position == 0)
        let roundTrip = try JSON.decoder().decode(Progress.self, from: JSON.encoder().encode(try #require(try F.progress(F.t20Chase))))
        #expect(roundTrip == (try F.progress(F.t20Chase)))
    }
}
