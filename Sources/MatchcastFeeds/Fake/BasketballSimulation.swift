import MatchcastCore

/// Scenario `basketball`: Los Angeles Lakers v Boston Celtics, possession by possession.
///
/// Four 12-minute quarters (period "Q1"…"Q4", clock "07:42" left in the period), five-minute
/// overtimes ("OT1", …) while tied. A possession takes 8–24 s of game clock and about 2.5
/// times that in simulated time; 2 minutes between quarters, a 15-minute half-time (`break`,
/// period "HT"). Key events: ends of periods, overtime, result.
struct BasketballSimulation {
    private static let home = Team(id: "lal", name: "Los Angeles Lakers", short: "LAL")
    private static let away = Team(id: "bos", name: "Boston Celtics", short: "BOS")

    private var dice: FakeDice
    private var builder: FakeTimelineBuilder
    private var points: [Side: Int] = [.home: 0, .away: 0]

    init(seed: UInt64) {
        dice = FakeDice(seed: seed, scenario: "basketball")
        builder = FakeTimelineBuilder(
            base: MatchSnapshot(
                id: "basketball", sport: .basketball, status: .scheduled,
                startsAt: FakeFeed.date(atSimulated: FakeFeed.leadIn), competition: "NBA",
                venue: "Crypto.com Arena, Los Angeles", home: Self.home, away: Self.away,
                score: .teamTotals(TeamScore(home: 0, away: 0))))
    }

    consuming func run() -> FakeTimeline {
        builder.emit(at: 0, status: .scheduled, score: score(period: nil, clock: nil))
        var time = FakeFeed.leadIn
        var possession: Side = dice.chance(0.5) ? .home : .away

        var period = 1
        while true {
            let overtime = period > 4
            let label = overtime ? "OT\(period - 4)" : "Q\(period)"
            var clock = overtime ? 300 : 720
            builder.emit(at: time, status: .live, score: score(period: label, clock: Self.clock(clock)))
            while clock > 0 {
                let used = min(clock, dice.int(8...24))
                clock -= used
                // Whole seconds: the wire format has no fractions. The extra 90 s is fouls, reviews, time-outs.
                time += (Double(used) * 2.5).rounded(.down) + (dice.chance(0.06) ? 90 : 0)
                let scored = dice.unit()
                // About 1.1 points a possession; the home side a touch better.
                let edge = possession == .home ? 0.02 : 0
                let made = scored < 0.12 + edge ? 3 : scored < 0.47 + edge ? 2 : scored < 0.55 + edge ? 1 : 0
                points[possession, default: 0] += made
                possession = possession.opponent
                builder.emit(at: time, status: .live, score: score(period: label, clock: Self.clock(clock)))
            }
            let line = "\(Self.home.short) \(points[.home, default: 0])-\(points[.away, default: 0]) \(Self.away.short)"
            let tied = points[.home] == points[.away]
            if period >= 4, !tied {
                time += dice.seconds(5...20)
                let winner = points[.home, default: 0] > points[.away, default: 0] ? Self.home : Self.away
                builder.event("result", type: "result", at: time, text: "Final: \(winner.name) win · \(line)")
                builder.emit(at: time, status: .completed, score: score(period: "F", clock: nil))
                break
            }
            builder.event("end-\(label)", type: "periodEnd", at: time, text: "End of \(label) · \(line)")
            if period == 2 {
                time += 5
                builder.emit(at: time, status: .break, score: score(period: "HT", clock: nil))
                time += 900
            } else {
                time += 120
            }
            period += 1
        }
        return builder.build()
    }

    /// "07:42": minutes and seconds left in the period.
    private static func clock(_ seconds: Int) -> String {
        let minutes = seconds / 60
        let rest = seconds % 60
        return (minutes < 10 ? "0" : "") + "\(minutes):" + (rest < 10 ? "0" : "") + "\(rest)"
    }

    private func score(period: String?, clock: String?) -> Score {
        .teamTotals(TeamScore(home: points[.home, default: 0], away: points[.away, default: 0], period: period, clock: clock))
    }
}
