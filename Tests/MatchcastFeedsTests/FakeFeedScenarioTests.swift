import Foundation
import MatchcastCore
import Testing

@testable import MatchcastFeeds

/// What every simulated match must respect over its whole timeline, for many seeds.
@Suite("FakeFeed scenarios")
struct FakeFeedScenarioTests {
    private static let seeds: [UInt64] = Array(1...12) + [0, 99, 12_345, .max]

    private static func timeline(_ name: String, seed: UInt64) throws -> FakeTimeline {
        try #require(try FakeFeed(seed: seed, scenarios: [name]).timeline(name))
    }

    // MARK: Every scenario

    @Test(arguments: FakeFeed.scenarioNames)
    func timelinesRunFromScheduledToCompletedWithGrowingSeq(_ name: String) throws {
        for seed in Self.seeds {
            let timeline = try Self.timeline(name, seed: seed)
            let entries = timeline.entries
            #expect(entries.first?.time == 0)
            #expect(entries.first?.snapshot.status == .scheduled)
            #expect(entries.last?.snapshot.status == .completed)
            #expect(entries.dropLast().allSatisfy { !$0.snapshot.status.isFinal }, "only the last snapshot is final")
            for (index, entry) in entries.enumerated() {
                #expect(entry.snapshot.seq == index + 1)
                #expect(entry.snapshot.updatedAt == FakeFeed.epoch.addingTimeInterval(entry.time))
                #expect(entry.snapshot.startsAt == FakeFeed.epoch.addingTimeInterval(FakeFeed.leadIn))
                if index > 0 { #expect(entry.time >= entries[index - 1].time) }
                #expect(entry.time == entry.time.rounded(), "whole seconds, as the wire format dates are")
                let beforeStart = entry.time < FakeFeed.leadIn
                #expect(beforeStart == (entry.snapshot.status == .scheduled))
            }
            // Event ids are stable and never reused for another event.
            var seen: [String: MatchEvent] = [:]
            for event in entries.flatMap(\.snapshot.events) {
                if let earlier = seen[event.id] { #expect(earlier == event) }
                seen[event.id] = event
            }
        }
    }

    // MARK: Cricket

    @Test(arguments: seeds)
    func cricketT20Invariants(_ seed: UInt64) throws {
        let timeline = try Self.timeline("cricket-t20", seed: seed)
        var previous: [CricketScore.Innings] = []
        var sawBreak = false
        let scores = timeline.entries.map { entry -> (MatchStatus, CricketScore?) in
            guard case .cricket(let score) = entry.snapshot.score else { return (entry.snapshot.status, nil) }
            return (entry.snapshot.status, score)
        }
        for (position, (status, optionalScore)) in scores.enumerated() {
            let score = try #require(optionalScore)
            #expect(score.format == .t20)
            #expect(score.innings.count <= 2)
            for (index, innings) in score.innings.enumerated() {
                #expect(innings.balls <= 120)
                #expect(innings.wickets <= 10)
                if index < previous.count {
                    #expect(innings.runs >= previous[index].runs, "runs never decrease")
                    #expect(innings.balls >= previous[index].balls)
                    #expect(innings.wickets >= previous[index].wickets)
                }
            }
            #expect(score.innings.count >= previous.count)
            if score.innings.count == 2 {
                #expect(score.innings[1].target == score.innings[0].runs + 1, "the chase's target is the first innings plus one")
                #expect(score.innings[0].team != score.innings[1].team)
                let first = score.innings[0]
                #expect(first.balls == 120 || first.wickets == 10, "the first innings ended before the chase")
            } else {
                #expect(score.innings.first?.target == nil)
            }
            if status == .break {
                sawBreak = true
                #expect(score.innings.count == 1)
                #expect(score.batters.isEmpty)
            }
            if status == .live, !score.innings.isEmpty {
                #expect(score.batters.count <= 2)
                if score.batters.count == 2 { #expect(score.batters.filter(\.onStrike).count == 1) }
                let bowler = try #require(score.bowler)
                #expect(bowler.balls <= 24, "four overs a bowler")
                let batted = score.batters.map(\.runs).reduce(0, +)
                #expect(batted <= score.innings.last?.runs ?? 0)
            }
            // An innings stops the ball it is decided: no snapshot after that moves it on.
            if let chase = score.innings.dropFirst().first, let target = chase.target,
                chase.runs >= target || chase.wickets == 10 || chase.balls == 120
            {
                #expect(position == scores.count - 1, "the chase is decided only by the last ball")
                #expect(status == .completed)
            }
            previous = score.innings
        }
        #expect(sawBreak, "an innings break between the innings")
        #expect(scores.last?.0 == .completed)

        let final = try #require(scores.last?.1)
        #expect(final.innings.count == 2)
        let chase = final.innings[1]
        #expect(chase.runs >= chase.target ?? .max || chase.wickets == 10 || chase.balls == 120)
        let result = try #require(timeline.entries.last?.snapshot.events.last)
        #expect(result.type == "result")
    }

    @Test func cricketHasWicketsSixesAndUsuallyAFifty() throws {
        var withFifty = 0
        for seed in Self.seeds {
            let events = try Self.timeline("cricket-t20", seed: seed).entries.flatMap(\.snapshot.events)
            let types = Set(events.map(\.type))
            #expect(types.isSuperset(of: ["toss", "wicket", "six", "inningsBreak", "result"]))
            if types.contains("fifty") { withFifty += 1 }
        }
        #expect(withFifty * 2 > Self.seeds.count, "a batter passes fifty in most seeds (\(withFifty) of \(Self.seeds.count))")
    }

    @Test func cricketTakesAboutThreeSimulatedHours() throws {
        for seed in Self.seeds {
            let timeline = try Self.timeline("cricket-t20", seed: seed)
            let live = timeline.entries.filter { $0.snapshot.status == .live }
            // Full T20 ~3 h; a chase won early or a collapse ends sooner.
            #expect(timeline.duration > 1.5 * 3600 && timeline.duration < 3.5 * 3600, "seed \(seed): \(timeline.duration) s")
            // A delivery every 35–45 s (a new batter adds 30 s); the only long gap is the innings break.
            for (earlier, later) in zip(live, live.dropFirst()) where later.time - earlier.time > 75 {
                let between = timeline.entries.filter { $0.time > earlier.time && $0.time < later.time }
                #expect(between.contains { $0.snapshot.status == .break }, "seed \(seed): gap at \(earlier.time)")
            }
        }
    }

    // MARK: Tennis

    @Test(arguments: seeds)
    func tennisPointsOnlyGrowAndEndWithAWinner(_ seed: UInt64) throws {
        let timeline = try Self.timeline("tennis-bo3", seed: seed)
        var points = ""
        var rules: TennisRules?
        for entry in timeline.entries {
            guard case .tennis(let score) = entry.snapshot.score else {
                Issue.record("tennis snapshot without a tennis score")
                return
            }
            #expect(rules == nil || rules == score.rules, "rules never change")
            rules = score.rules
            #expect(score.points.hasPrefix(points))
            #expect(score.points.count - points.count <= 1, "one point a snapshot")
            points = score.points
            let state = try TennisEngine.derive(points: score.points, rules: score.rules)
            #expect((state.winner != nil) == (entry.snapshot.status == .completed))
        }
        #expect(points.count > 100)
        let final = try TennisEngine.derive(points: points, rules: try #require(rules))
        #expect(final.winner != nil)
        let result = try #require(timeline.entries.last?.snapshot.events.last)
        #expect(result.type == "result")
    }

    @Test func tennisSometimesHasATiebreak() throws {
        var tiebreaks = 0
        for seed in Self.seeds {
            let timeline = try Self.timeline("tennis-bo3", seed: seed)
            let sets = timeline.entries.flatMap(\.snapshot.events).filter { $0.type == "set" || $0.type == "result" }
            if sets.contains(where: { $0.text.contains("(") }) { tiebreaks += 1 }
        }
        #expect(tiebreaks > 0)
        #expect(tiebreaks < Self.seeds.count)
    }

    // MARK: Football

    @Test(arguments: seeds)
    func footballScoreNeverDecreasesAndTheClockRuns(_ seed: UInt64) throws {
        let timeline = try Self.timeline("football", seed: seed)
        var last = TeamScore(home: 0, away: 0)
        var periods: [String] = []
        for entry in timeline.entries {
            guard case .teamTotals(let score) = entry.snapshot.score else {
                Issue.record("football snapshot without a team score")
                return
            }
            #expect(score.home >= last.home && score.away >= last.away)
            last = score
            if let period = score.period, periods.last != period { periods.append(period) }
            if entry.snapshot.status == .live {
                let clock = try #require(score.clock)
                #expect(clock.hasSuffix("'"))
            }
        }
        #expect(periods == ["1H", "HT", "2H", "FT"])
        let goals = timeline.entries.last?.snapshot.events.filter { $0.type == "goal" }.count ?? 0
        #expect(goals <= last.home + last.away)
        #expect(timeline.entries.contains { entry in
            if case .teamTotals(let score) = entry.snapshot.score { return score.clock == "67'" }
            return false
        })
    }

    // MARK: Basketball

    @Test(arguments: seeds)
    func basketballScoreNeverDecreasesAndPeriodsRunInOrder(_ seed: UInt64) throws {
        let timeline = try Self.timeline("basketball", seed: seed)
        var last = TeamScore(home: 0, away: 0)
        var periods: [String] = []
        for entry in timeline.entries {
            guard case .teamTotals(let score) = entry.snapshot.score else {
                Issue.record("basketball snapshot without a team score")
                return
            }
            #expect(score.home >= last.home && score.away >= last.away)
            last = score
            if let period = score.period, periods.last != period { periods.append(period) }
        }
        #expect(Array(periods.prefix(5)) == ["Q1", "Q2", "HT", "Q3", "Q4"])
        #expect(periods.last == "F")
        #expect(periods.dropFirst(5).dropLast().allSatisfy { $0.hasPrefix("OT") })
        #expect(last.home != last.away, "no draws in basketball")
    }

    // MARK: Baseball

    @Test(arguments: seeds)
    func baseballRunsOutsAndInningsFollowTheRules(_ seed: UInt64) throws {
        let timeline = try Self.timeline("baseball", seed: seed)
        var last = BaseballScore(home: 0, away: 0, inning: 1, half: .top, outs: 0, bases: [false, false, false])
        for entry in timeline.entries {
            guard case .baseball(let score) = entry.snapshot.score else {
                Issue.record("baseball snapshot without a baseball score")
                return
            }
            #expect(score.home >= last.home && score.away >= last.away)
            #expect((0...3).contains(score.outs) && score.bases.count == 3)
            #expect(score.inning > last.inning || (score.inning == last.inning && (score.half == last.half || score.half == .bottom)))
            // The home side never bats in the ninth or later once it leads.
            if score.half == .bottom, score.inning >= 9, entry.snapshot.status == .live {
                #expect(score.home <= score.away)
            }
            last = score
        }
        #expect(last.inning >= 9)
        #expect(last.home != last.away)
    }
}
