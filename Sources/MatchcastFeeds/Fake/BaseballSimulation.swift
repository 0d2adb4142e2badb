import MatchcastCore

/// Scenario `baseball`: New York Yankees at Boston Red Sox, plate appearance by plate appearance.
///
/// Nine innings, the bottom of the ninth skipped when the home side leads and ended by a
/// walk-off; extra innings start with a runner on second. A plate appearance every 80–150
/// simulated seconds, 2 minutes between half-innings, so a game takes about three hours.
/// The status stays `live` between half-innings, as MLB's own feed does. Key events: every
/// play that scores (`run`), and the result.
struct BaseballSimulation {
    private static let home = Team(id: "bos", name: "Boston Red Sox", short: "BOS")
    private static let away = Team(id: "nyy", name: "New York Yankees", short: "NYY")
    private static let homeLineup = [
        "Jarren Duran", "Rafael Devers", "Alex Bregman", "Triston Casas", "Wilyer Abreu", "Trevor Story",
        "Ceddanne Rafaela", "Connor Wong", "Kristian Campbell",
    ]
    private static let awayLineup = [
        "Paul Goldschmidt", "Aaron Judge", "Cody Bellinger", "Jazz Chisholm Jr.", "Ben Rice", "Anthony Volpe",
        "Austin Wells", "Jasson Domínguez", "Oswaldo Cabrera",
    ]

    private var dice: FakeDice
    private var builder: FakeTimelineBuilder
    private var runs: [Side: Int] = [.home: 0, .away: 0]
    private var time: Double = 0
    private var plays = 0

    init(seed: UInt64) {
        dice = FakeDice(seed: seed, scenario: "baseball")
        builder = FakeTimelineBuilder(
            base: MatchSnapshot(
                id: "baseball", sport: .baseball, status: .scheduled,
                startsAt: FakeFeed.date(atSimulated: FakeFeed.leadIn), competition: "MLB",
                venue: "Fenway Park, Boston", home: Self.home, away: Self.away,
                score: .empty(for: .baseball)))
    }

    consuming func run() -> FakeTimeline {
        builder.emit(at: 0, status: .scheduled, score: score(inning: 1, half: .top, outs: 0, bases: [false, false, false]))
        time = FakeFeed.leadIn
        var batter: [Side: Int] = [.home: 0, .away: 0]
        var inning = 1
        game: while true {
            for half in [BaseballScore.Half.top, .bottom] {
                let batting: Side = half == .top ? .away : .home
                if half == .bottom, inning >= 9, runs[.home, default: 0] > runs[.away, default: 0] { break game }
                // Extra innings begin with the previous batter on second.
                var bases = [false, inning > 9, false]
                var outs = 0
                builder.emit(at: time, status: .live, score: score(inning: inning, half: half, outs: outs, bases: bases))
                while outs < 3 {
                    time += dice.seconds(80...150)
                    let lineup = batting == .home ? Self.homeLineup : Self.awayLineup
                    let name = lineup[batter[batting, default: 0] % lineup.count]
                    batter[batting, default: 0] += 1
                    let (scored, description) = plateAppearance(name, bases: &bases, outs: &outs)
                    plays += 1
                    if scored > 0 {
                        runs[batting, default: 0] += scored
                        builder.event("play-\(plays)", type: "run", at: time, text: description)
                    }
                    let walkOff = half == .bottom && inning >= 9 && runs[.home, default: 0] > runs[.away, default: 0]
                    if walkOff {
                        finish(inning: inning, half: half, outs: outs, bases: bases)
                        return builder.build()
                    }
                    builder.emit(at: time, status: .live, score: score(inning: inning, half: half, outs: outs, bases: bases))
                }
                time += 120
            }
            if inning >= 9, runs[.home] != runs[.away] { break }
            inning += 1
        }
        finish(inning: inning, half: runs[.home, default: 0] > runs[.away, default: 0] ? .top : .bottom, outs: 3, bases: [false, false, false])
        return builder.build()
    }

    private mutating func finish(inning: Int, half: BaseballScore.Half, outs: Int, bases: [Bool]) {
        let winner = runs[.home, default: 0] > runs[.away, default: 0] ? Self.home : Self.away
        let line = "\(Self.away.short) \(runs[.away, default: 0]) @ \(Self.home.short) \(runs[.home, default: 0])"
        builder.event("result", type: "result", at: time, text: "Final: \(winner.name) win · \(line)")
        builder.emit(at: time, status: .completed, score: score(inning: inning, half: half, outs: outs, bases: bases))
    }

    /// One batter's turn: moves runners, counts outs, returns runs scored and what happened.
    private mutating func plateAppearance(_ name: String, bases: inout [Bool], outs: inout Int) -> (Int, String) {
        let roll = dice.unit()
        switch roll {
        case ..<0.09:
            // A walk forces runners only as far as they must go.
            var scored = 0
            if bases[0] {
                if bases[1] {
                    if bases[2] { scored = 1 }
                    bases[2] = true
                }
                bases[1] = true
            }
            bases[0] = true
            return (scored, "\(name) walks" + (scored > 0 ? ", a run scores." : "."))
        case ..<0.24:
            let scored = advance(&bases, by: 1, batterTo: 0)
            return (scored, "\(name) singles" + Self.scoring(scored))
        case ..<0.285:
            let scored = advance(&bases, by: 2, batterTo: 1)
            return (scored, "\(name) doubles" + Self.scoring(scored))
        case ..<0.29:
            let scored = advance(&bases, by: 3, batterTo: 2)
            return (scored, "\(name) triples" + Self.scoring(scored))
        case ..<0.32:
            let scored = bases.filter { $0 }.count + 1
            bases = [false, false, false]
            return (scored, "\(name) homers" + (scored > 1 ? " · \(scored) runs score." : "."))
        default:
            outs += 1
            // A deep fly with a runner on third and fewer than two outs scores him.
            if outs < 3, bases[2], dice.chance(0.25) {
                bases[2] = false
                return (1, "\(name) hits a sacrifice fly, a run scores.")
            }
            return (0, "\(name) \(dice.pick(["strikes out", "grounds out", "flies out", "lines out", "pops out"])).")
        }
    }

    /// Moves every runner `by` bases, puts the batter on base `batterTo`; returns runs scored.
    private func advance(_ bases: inout [Bool], by steps: Int, batterTo base: Int) -> Int {
        var scored = 0
        var next = [false, false, false]
        for index in (0..<3).reversed() where bases[index] {
            let target = index + steps
            if target >= 3 { scored += 1 } else { next[target] = true }
        }
        next[base] = true
        bases = next
        return scored
    }

    private static func scoring(_ runs: Int) -> String {
        runs == 0 ? "." : runs == 1 ? ", a run scores." : ", \(runs) runs score."
    }

    private func score(inning: Int, half: BaseballScore.Half, outs: Int, bases: [Bool]) -> Score {
        .baseball(
            BaseballScore(
                home: runs[.home, default: 0], away: runs[.away, default: 0], inning: inning, half: half, outs: outs,
                bases: bases))
    }
}
