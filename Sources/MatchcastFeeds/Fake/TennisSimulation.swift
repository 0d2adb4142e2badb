import MatchcastCore

/// Scenario `tennis-bo3`: Carlos Alcaraz v Jannik Sinner, best of three, point by point.
///
/// The score is only the growing `H`/`A` string (docs/formats.md, "Feed (native v1)"); this type keeps its own
/// count of games and sets just to know when a set or the match is won. A point every
/// 25–50 simulated seconds, 30 s more after a game, 90 s at a change of ends, 2 min after a
/// set. Tiebreaks at 6-6, the final set's too (to 7). Key events: breaks of serve, sets, result.
struct TennisSimulation {
    private static let rules = TennisRules(bestOf: 3, firstServer: .home, finalSetTiebreak: 7)

    private var dice: FakeDice
    private var builder: FakeTimelineBuilder
    private static let home = Team(id: "alcaraz", name: "Carlos Alcaraz", short: "ALC")
    private static let away = Team(id: "sinner", name: "Jannik Sinner", short: "SIN")

    init(seed: UInt64) {
        dice = FakeDice(seed: seed, scenario: "tennis-bo3")
        builder = FakeTimelineBuilder(
            base: MatchSnapshot(
                id: "tennis-bo3", sport: .tennis, status: .scheduled,
                startsAt: FakeFeed.date(atSimulated: FakeFeed.leadIn), competition: "Madrid Open 2026",
                venue: "Manolo Santana Stadium, Madrid", home: Self.home, away: Self.away,
                score: .tennis(TennisScore(rules: Self.rules, points: ""))))
    }

    consuming func run() -> FakeTimeline {
        var rules = Self.rules
        rules.firstServer = dice.chance(0.5) ? .home : .away
        // Chance that the server wins a point on his serve, per player.
        let holdsServe: [Side: Double] = [.home: 0.60 + Double(dice.int(0...8)) / 100, .away: 0.60 + Double(dice.int(0...8)) / 100]

        var points = ""
        builder.emit(at: 0, status: .scheduled, score: .tennis(TennisScore(rules: rules, points: points)))

        var time = FakeFeed.leadIn
        builder.emit(at: time, status: .live, score: .tennis(TennisScore(rules: rules, points: points)))

        var setsWon: [Side: Int] = [.home: 0, .away: 0]
        // Games of each finished set (home, away) and the tiebreak loser's points.
        var setScores: [(home: Int, away: Int, tiebreakLoser: Int?)] = []
        var gameIndex = 0
        var setNumber = 1
        match: while true {
            var games: [Side: Int] = [.home: 0, .away: 0]
            set: while true {
                let tiebreak = games[.home] == 6 && games[.away] == 6
                let gameServer = gameIndex % 2 == 0 ? rules.firstServer : rules.firstServer.opponent
                var won: [Side: Int] = [.home: 0, .away: 0]
                var pointInGame = 0
                while true {
                    // In a tiebreak the serve changes after the first point, then every two.
                    let server = tiebreak && (pointInGame + 1) / 2 % 2 == 1 ? gameServer.opponent : gameServer
                    let winner: Side = dice.chance(holdsServe[server, default: 0.6]) ? server : server.opponent
                    won[winner, default: 0] += 1
                    pointInGame += 1
                    points.append(winner == .home ? "H" : "A")
                    time += dice.seconds(25...50)

                    let needed = tiebreak ? 7 : 4
                    let (mine, theirs) = (won[winner, default: 0], won[winner.opponent, default: 0])
                    guard mine >= needed, mine - theirs >= 2 else {
                        builder.emit(at: time, status: .live, score: .tennis(TennisScore(rules: rules, points: points)))
                        continue
                    }

                    // Game (or tiebreak) over.
                    games[winner, default: 0] += 1
                    gameIndex += 1
                    let (g, o) = (games[winner, default: 0], games[winner.opponent, default: 0])
                    let setOver = tiebreak || (g >= 6 && g - o >= 2)
                    let name = winner == .home ? Self.home.name : Self.away.name
                    if !tiebreak, winner != gameServer, !setOver {
                        let line = "\(Self.home.short) \(games[.home, default: 0])-\(games[.away, default: 0]) \(Self.away.short)"
                        builder.event(
                            "s\(setNumber)-g\(gameIndex)-break", type: "break", at: time,
                            text: "Break! \(name) breaks serve · \(line) in set \(setNumber)")
                    }
                    if setOver {
                        setsWon[winner, default: 0] += 1
                        let homeGames = games[.home, default: 0]
                        let awayGames = games[.away, default: 0]
                        let loserPoints = won[winner.opponent, default: 0]
                        setScores.append((homeGames, awayGames, tiebreak ? loserPoints : nil))
                        let matchOver = setsWon[winner, default: 0] == rules.bestOf / 2 + 1
                        if matchOver {
                            builder.event(
                                "result", type: "result", at: time,
                                text: "\(name) wins \(Self.describe(setScores, from: winner))")
                            builder.emit(at: time, status: .completed, score: .tennis(TennisScore(rules: rules, points: points)))
                            break match
                        }
                        builder.event(
                            "set\(setNumber)", type: "set", at: time,
                            text: "Set \(setNumber) to \(name) \(g)-\(o)" + (tiebreak ? "(\(loserPoints))" : ""))
                        builder.emit(at: time, status: .live, score: .tennis(TennisScore(rules: rules, points: points)))
                        time += 120
                        setNumber += 1
                        break set
                    }
                    builder.emit(at: time, status: .live, score: .tennis(TennisScore(rules: rules, points: points)))
                    time += (games[.home, default: 0] + games[.away, default: 0]) % 2 == 1 ? 90 : 30
                    break
                }
            }
        }
        return builder.build()
    }

    /// "6-4 3-6 7-6(5)", each set from the winner's side.
    private static func describe(_ sets: [(home: Int, away: Int, tiebreakLoser: Int?)], from side: Side) -> String {
        sets.map { set in
            let (mine, theirs) = side == .home ? (set.home, set.away) : (set.away, set.home)
            return "\(mine)-\(theirs)" + (set.tiebreakLoser.map { "(\($0))" } ?? "")
        }.joined(separator: " ")
    }
}
