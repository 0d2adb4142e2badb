import MatchcastCore

/// Scenario `cricket-t20`: Mumbai Indians v Chennai Super Kings, ball by ball.
///
/// Two innings of at most 120 legal balls; wides and no-balls are extras and are bowled
/// again. A delivery every 35–45 simulated seconds (a new batter takes 30 more), a 15-minute
/// innings break (`break`), and the chase stops at the target, 10 wickets or 120 balls.
/// Key events: toss, wickets, sixes, fifties, innings break and result.
struct CricketT20Simulation {
    private struct Side {
        let team: Team
        /// Batting order.
        let players: [String]
        /// Indices into `players` of the five bowlers, each bowling four overs.
        let bowlers: [Int]
    }

    /// One innings in progress.
    private struct Innings {
        let batting: Side
        let fielding: Side
        let target: Int?
        var runs = 0
        var wickets = 0
        var balls = 0
        var batterRuns = Array(repeating: 0, count: 11)
        var batterBalls = Array(repeating: 0, count: 11)
        var fiftyReached = Array(repeating: false, count: 11)
        var striker = 0
        var nonStriker = 1
        var nextIn = 2
        var bowlerBalls = Array(repeating: 0, count: 11)
        var bowlerRuns = Array(repeating: 0, count: 11)
        var bowlerWickets = Array(repeating: 0, count: 11)
        var bowler: Int

        var isOver: Bool {
            balls >= 120 || wickets >= 10 || target.map { runs >= $0 } ?? false
        }

        var total: CricketScore.Innings {
            CricketScore.Innings(team: batting.team.id, runs: runs, wickets: wickets, balls: balls, target: target)
        }
    }

    private enum Dismissal {
        case caught, bowled, lbw, runOut
    }

    private static let mumbai = Side(
        team: Team(id: "mi", name: "Mumbai Indians", short: "MI"),
        players: [
            "Rohit Sharma", "Ryan Rickelton", "Suryakumar Yadav", "Tilak Varma", "Hardik Pandya", "Naman Dhir",
            "Will Jacks", "Mitchell Santner", "Deepak Chahar", "Trent Boult", "Jasprit Bumrah",
        ],
        bowlers: [10, 9, 8, 7, 4])

    private static let chennai = Side(
        team: Team(id: "csk", name: "Chennai Super Kings", short: "CSK"),
        players: [
            "Ruturaj Gaikwad", "Devon Conway", "Rachin Ravindra", "Shivam Dube", "Ravindra Jadeja", "MS Dhoni",
            "Sam Curran", "Ravichandran Ashwin", "Noor Ahmad", "Anshul Kamboj", "Matheesha Pathirana",
        ],
        bowlers: [10, 9, 8, 7, 4])

    private var dice: FakeDice
    private var builder: FakeTimelineBuilder
    private var time: Double = 0
    /// Extra simulated seconds before the next delivery (a new batter walking in).
    private var delay: Double = 0
    /// Innings finished before the current one.
    private var completed: [CricketScore.Innings] = []

    init(seed: UInt64) {
        dice = FakeDice(seed: seed, scenario: "cricket-t20")
        builder = FakeTimelineBuilder(
            base: MatchSnapshot(
                id: "cricket-t20", sport: .cricket, status: .scheduled,
                startsAt: FakeFeed.date(atSimulated: FakeFeed.leadIn), competition: "IPL 2026",
                venue: "Wankhede Stadium, Mumbai", home: Self.mumbai.team, away: Self.chennai.team,
                score: .cricket(CricketScore(format: .t20, oversLimit: 20, innings: []))))
    }

    consuming func run() -> FakeTimeline {
        builder.emit(at: 0, status: .scheduled, score: score())

        let tossWinner = dice.chance(0.5) ? Self.mumbai : Self.chennai
        let tossLoser = tossWinner.team.id == Self.mumbai.team.id ? Self.chennai : Self.mumbai
        let bats = dice.chance(0.4)
        let first = bats ? tossWinner : tossLoser
        let second = bats ? tossLoser : tossWinner
        time = FakeFeed.leadIn - 60
        builder.event(
            "toss", type: "toss", at: time,
            text: "\(tossWinner.team.short) won the toss and chose to \(bats ? "bat" : "bowl")")
        builder.emit(at: time, status: .scheduled, score: score())

        time = FakeFeed.leadIn
        let firstInnings = play(batting: first, fielding: second, target: nil, number: 1)
        completed.append(firstInnings.total)
        let target = firstInnings.runs + 1

        time += dice.seconds(30...60)
        builder.event(
            "inn1-end", type: "inningsBreak", at: time,
            text: "\(first.team.short) \(firstInnings.runs)/\(firstInnings.wickets) (\(Self.overs(firstInnings.balls))) · "
                + "\(second.team.short) need \(target) to win")
        builder.emit(at: time, status: .break, score: score())

        time += 900
        play(batting: second, fielding: first, target: target, number: 2)
        return builder.build()
    }

    /// Plays one innings ball by ball; the chase's last ball is emitted as `completed`.
    @discardableResult
    private mutating func play(batting: Side, fielding: Side, target: Int?, number: Int) -> Innings {
        var bowlingOrder = fielding.bowlers
        for index in stride(from: bowlingOrder.count - 1, to: 0, by: -1) {
            bowlingOrder.swapAt(index, dice.int(0...index))
        }
        var innings = Innings(batting: batting, fielding: fielding, target: target, bowler: bowlingOrder[0])
        delay = 0
        emit(innings, status: .live)

        var delivery = 0
        over: for over in 0..<20 {
            innings.bowler = bowlingOrder[over % bowlingOrder.count]
            var legal = 0
            while legal < 6 {
                time += dice.seconds(35...45) + delay
                delay = 0
                delivery += 1
                let wasLegal = bowl(&innings, over: over, delivery: delivery, number: number)
                if wasLegal { legal += 1 }
                if innings.isOver { break over }
                if legal == 6 { swap(&innings.striker, &innings.nonStriker) }
                emit(innings, status: .live)
            }
        }
        if number == 2 {
            time += dice.seconds(5...15)
            builder.event("result", type: "result", at: time, text: result(chase: innings))
            emit(innings, status: .completed)
        } else {
            emit(innings, status: .live)
        }
        return innings
    }

    /// One delivery; returns whether it was a legal ball.
    private mutating func bowl(_ innings: inout Innings, over: Int, delivery: Int, number: Int) -> Bool {
        let eventID = "inn\(number)-d\(delivery)"
        let roll = dice.unit()
        if roll < 0.035 {
            let extras = dice.chance(0.05) ? 5 : 1
            innings.runs += extras
            innings.bowlerRuns[innings.bowler] += extras
            return false
        }
        if roll < 0.041 {
            // The penalty run is an extra; whatever the batter hits off it is his.
            let hit = dice.pick([0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 4, 4, 6])
            innings.runs += 1
            innings.bowlerRuns[innings.bowler] += 1
            innings.batterBalls[innings.striker] += 1
            score(hit, on: &innings, eventID: eventID)
            return false
        }

        innings.balls += 1
        innings.bowlerBalls[innings.bowler] += 1
        innings.batterBalls[innings.striker] += 1

        let phase = over < 6 ? (four: 0.14, six: 0.040, wicket: 0.040)
            : over < 15 ? (four: 0.09, six: 0.045, wicket: 0.040)
            : (four: 0.13, six: 0.080, wicket: 0.070)
        let skill = innings.striker < 4 ? 1.2 : innings.striker < 7 ? 1.0 : 0.6
        let wicket = phase.wicket / skill
        let four = wicket + phase.four * skill
        let six = four + phase.six * skill
        let roll2 = dice.unit()
        if roll2 < wicket {
            dismiss(&innings, eventID: eventID)
        } else if roll2 < four {
            score(4, on: &innings, eventID: eventID)
        } else if roll2 < six {
            score(6, on: &innings, eventID: eventID)
        } else {
            let rest = dice.unit()
            score(rest < 0.07 ? 2 : rest < 0.076 ? 3 : rest < 0.45 ? 1 : 0, on: &innings, eventID: eventID)
        }
        return true
    }

    /// Runs off the bat: totals, the batter's and the bowler's figures, strike, events.
    private mutating func score(_ runs: Int, on innings: inout Innings, eventID: String) {
        guard runs > 0 else { return }
        let batter = innings.striker
        let name = innings.batting.players[batter]
        innings.batterRuns[batter] += runs
        innings.runs += runs
        innings.bowlerRuns[innings.bowler] += runs
        if runs == 6 {
            builder.event(
                eventID + "-six", type: "six", at: time,
                text: "SIX! \(name) off \(Self.surname(innings.fielding.players[innings.bowler])) · "
                    + "\(innings.batting.team.short) \(innings.runs)/\(innings.wickets)")
        }
        if innings.batterRuns[batter] >= 50, !innings.fiftyReached[batter] {
            innings.fiftyReached[batter] = true
            builder.event(
                eventID + "-fifty", type: "fifty", at: time,
                text: "Fifty for \(name): \(innings.batterRuns[batter]) (\(innings.batterBalls[batter]))")
        }
        if runs % 2 == 1 { swap(&innings.striker, &innings.nonStriker) }
    }

    private mutating func dismiss(_ innings: inout Innings, eventID: String) {
        let batter = innings.striker
        let bowler = Self.surname(innings.fielding.players[innings.bowler])
        let kind = dice.pick([Dismissal.caught, .caught, .caught, .caught, .caught, .caught, .bowled, .bowled, .lbw, .runOut])
        let fielderIndex = dice.int(0...10)
        let fielder = Self.surname(innings.fielding.players[fielderIndex])
        let how: String
        switch kind {
        case .caught: how = fielderIndex == innings.bowler ? "c & b \(bowler)" : "c \(fielder) b \(bowler)"
        case .bowled: how = "b \(bowler)"
        case .lbw: how = "lbw b \(bowler)"
        case .runOut: how = "run out (\(fielder))"
        }
        if kind != .runOut { innings.bowlerWickets[innings.bowler] += 1 }
        innings.wickets += 1
        builder.event(
            eventID + "-wicket", type: "wicket", at: time,
            text: "\(Self.surname(innings.batting.players[batter])) \(how) "
                + "\(innings.batterRuns[batter]) (\(innings.batterBalls[batter]))")
        if innings.nextIn < 11 {
            innings.striker = innings.nextIn
            innings.nextIn += 1
            delay = 30
        }
    }

    private mutating func emit(_ innings: Innings, status: MatchStatus) {
        var batters: [CricketScore.Batter] = []
        if innings.wickets < 10 {
            for index in [innings.striker, innings.nonStriker].sorted() {
                batters.append(
                    CricketScore.Batter(
                        name: innings.batting.players[index], runs: innings.batterRuns[index],
                        balls: innings.batterBalls[index], onStrike: index == innings.striker))
            }
        }
        let bowler = CricketScore.Bowler(
            name: innings.fielding.players[innings.bowler], balls: innings.bowlerBalls[innings.bowler],
            runs: innings.bowlerRuns[innings.bowler], wickets: innings.bowlerWickets[innings.bowler])
        builder.emit(
            at: time, status: status, score: score(innings: completed + [innings.total], batters: batters, bowler: bowler))
    }

    private func score(
        innings: [CricketScore.Innings]? = nil, batters: [CricketScore.Batter] = [], bowler: CricketScore.Bowler? = nil
    ) -> Score {
        .cricket(
            CricketScore(format: .t20, oversLimit: 20, innings: innings ?? completed, batters: batters, bowler: bowler))
    }

    private func result(chase: Innings) -> String {
        let target = chase.target ?? 0
        if chase.runs >= target {
            let left = 10 - chase.wickets
            let balls = 120 - chase.balls
            return "\(chase.batting.team.short) won by \(left) wicket\(left == 1 ? "" : "s")"
                + (balls > 0 ? " (\(balls) ball\(balls == 1 ? "" : "s") left)" : "")
        }
        if chase.runs == target - 1 { return "Match tied" }
        let margin = target - 1 - chase.runs
        return "\(chase.fielding.team.short) won by \(margin) run\(margin == 1 ? "" : "s")"
    }

    private static func overs(_ balls: Int) -> String {
        balls % 6 == 0 ? "\(balls / 6)" : "\(balls / 6).\(balls % 6)"
    }

    private static func surname(_ name: String) -> String {
        name.split(separator: " ").last.map(String.init) ?? name
    }
}
