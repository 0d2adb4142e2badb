import MatchcastCore

/// Scenario `football`: Arsenal v Chelsea, minute by minute.
///
/// The clock ticks every simulated minute ("1'" … "45'", then "45+2'" in stoppage time);
/// 1–4 minutes of stoppage in the first half and 2–7 in the second, a 15-minute half-time
/// (`break`, period "HT"), full time `completed` with period "FT". A goal shows as its own
/// snapshot at the second of the minute it is scored. Key events: kick-off, goals, half and full time.
struct FootballSimulation {
    private static let homeScorers = [
        "Bukayo Saka", "Kai Havertz", "Gabriel Martinelli", "Martin Ødegaard", "Declan Rice", "Leandro Trossard",
        "Gabriel Magalhães",
    ]
    private static let awayScorers = [
        "Cole Palmer", "Nicolas Jackson", "Noni Madueke", "Enzo Fernández", "Pedro Neto", "Christopher Nkunku",
        "Moisés Caicedo",
    ]

    private var dice: FakeDice
    private var builder: FakeTimelineBuilder
    private static let home = Team(id: "ars", name: "Arsenal", short: "ARS")
    private static let away = Team(id: "che", name: "Chelsea", short: "CHE")
    private var goals: [Side: Int] = [.home: 0, .away: 0]
    private var goalCount = 0

    init(seed: UInt64) {
        dice = FakeDice(seed: seed, scenario: "football")
        builder = FakeTimelineBuilder(
            base: MatchSnapshot(
                id: "football", sport: .football, status: .scheduled,
                startsAt: FakeFeed.date(atSimulated: FakeFeed.leadIn), competition: "Premier League",
                venue: "Emirates Stadium, London", home: Self.home,
                away: Self.away, score: .teamTotals(TeamScore(home: 0, away: 0))))
    }

    consuming func run() -> FakeTimeline {
        builder.emit(at: 0, status: .scheduled, score: score(period: nil, clock: nil))

        var time = FakeFeed.leadIn
        builder.event("kickoff", type: "kickoff", at: time, text: "Kick-off: \(Self.home.name) v \(Self.away.name)")
        half(period: "1H", from: 1, regulation: 45, stoppage: dice.int(1...4), start: &time)

        builder.event("ht", type: "halfTime", at: time, text: "Half-time: \(line)")
        builder.emit(at: time, status: .break, score: score(period: "HT", clock: nil))

        time += 900
        half(period: "2H", from: 46, regulation: 90, stoppage: dice.int(2...7), start: &time)

        builder.event("ft", type: "fullTime", at: time, text: "Full time: \(line)")
        builder.emit(at: time, status: .completed, score: score(period: "FT", clock: nil))
        return builder.build()
    }

    /// Plays minutes `first ... regulation + stoppage`; `time` ends a minute after the last one began.
    private mutating func half(period: String, from first: Int, regulation: Int, stoppage: Int, start time: inout Double) {
        for minute in first...(regulation + stoppage) {
            let clock = minute > regulation ? "\(regulation)+\(minute - regulation)'" : "\(minute)'"
            builder.emit(at: time, status: .live, score: score(period: period, clock: clock))
            // Home side a little stronger: about 1.5 and 1.2 goals a match.
            for side in [Side.home, .away] where dice.chance(side == .home ? 0.0158 : 0.0126) {
                let scoredAt = time + dice.seconds(5...55)
                goals[side, default: 0] += 1
                goalCount += 1
                let scorer = dice.pick(side == .home ? Self.homeScorers : Self.awayScorers)
                builder.event(
                    "goal-\(goalCount)", type: "goal", at: scoredAt,
                    text: "GOAL! \(scorer) \(clock) · \(line)")
                builder.emit(at: max(scoredAt, builder.lastTime), status: .live, score: score(period: period, clock: clock))
            }
            time += 60
        }
    }

    /// "Arsenal 2-1 Chelsea"
    private var line: String {
        "\(Self.home.name) \(goals[.home, default: 0])-\(goals[.away, default: 0]) \(Self.away.name)"
    }

    private func score(period: String?, clock: String?) -> Score {
        .teamTotals(TeamScore(home: goals[.home, default: 0], away: goals[.away, default: 0], period: period, clock: clock))
    }
}
