import MatchcastCore
import Testing

@Suite("Tennis engine")
struct TennisEngineTests {
    private static let bestOfThree = TennisRules(bestOf: 3, firstServer: .home, finalSetTiebreak: 7)

    /// A game of four straight points.
    private func game(_ side: Side) -> String { side == .home ? "HHHH" : "AAAA" }

    /// `count` games in which every server holds, starting with `firstServer`.
    private func holds(_ count: Int, firstServer: Side = .home) -> String {
        (0..<count).map { game($0 % 2 == 0 ? firstServer : firstServer.opponent) }.joined()
    }

    /// A set won 6-0 by `side`.
    private func bagel(_ side: Side) -> String { String(repeating: game(side), count: 6) }

    /// A tiebreak won `winner`-`loser` points by `side`: level pairs first, so it
    /// is not decided before its last point.
    private func tiebreak(_ side: Side, _ winner: Int, _ loser: Int) -> String {
        let (w, l) = side == .home ? ("H", "A") : ("A", "H")
        let level = min(loser, winner - 2)
        return String(repeating: l + w, count: level) + String(repeating: l, count: loser - level)
            + String(repeating: w, count: winner - level)
    }

    private func derive(_ points: String, _ rules: TennisRules = Self.bestOfThree) throws(TennisError) -> TennisState {
        try TennisEngine.derive(points: points, rules: rules)
    }

    @Test func startOfMatch() throws {
        let state = try derive("")
        #expect(state.sets == [[0, 0]])
        #expect(state.points == ["0", "0"])
        #expect(state.server == .home)
        #expect(state.winner == nil)
    }

    @Test func loveGame() throws {
        let state = try derive("HHHH")
        #expect(state.games == [1, 0])
        #expect(state.sets == [[1, 0]])
        #expect(state.points == ["0", "0"])
        #expect(state.server == .away)
        #expect(state.breaks == [0, 0])
        #expect(state.gamesPlayed == 1)
        #expect(state.pointsPlayed == 4)
    }

    @Test func pointLabels() throws {
        #expect(try derive("H").points == ["15", "0"])
        #expect(try derive("HHA").points == ["30", "15"])
        #expect(try derive("HHHA").points == ["40", "15"])
    }

    @Test func deuceAdvantageAndBackToDeuce() throws {
        #expect(try derive("HHHAAA").points == ["40", "40"])
        #expect(try derive("HHHAAAH").points == ["AD", "40"])
        #expect(try derive("HHHAAAHA").points == ["40", "40"])
        #expect(try derive("HHHAAAHAA").points == ["40", "AD"])
        #expect(try derive("HHHAAAHAAH").points == ["40", "40"])
        let won = try derive("HHHAAAHAAHAA")
        #expect(won.games == [0, 1])
        #expect(won.points == ["0", "0"])
        // Home served and lost: a break for away.
        #expect(won.breaks == [0, 1])
    }

    @Test func sixFourSet() throws {
        // Holds to 4-4, then home breaks and holds.
        let state = try derive(holds(8) + game(.home) + game(.home))
        #expect(state.sets == [[6, 4], [0, 0]])
        #expect(state.games == [0, 0])
        #expect(state.setsWon == [1, 0])
        #expect(state.tiebreakScores == [nil])
        #expect(state.breaks == [1, 0])
        #expect(state.gamesPlayed == 10)
        // Ten games played, so the first server opens the second set.
        #expect(state.server == .home)
    }

    @Test func sevenFiveNeedsTwoGameLead() throws {
        let fiveAll = holds(10)
        #expect(try derive(fiveAll + game(.home)).sets == [[6, 5]])
        #expect(try derive(fiveAll + game(.home) + game(.home)).sets == [[7, 5], [0, 0]])
    }

    @Test func tiebreakServeRotation() throws {
        let sixAll = holds(12)
        let start = try derive(sixAll)
        #expect(start.tiebreak)
        #expect(start.games == [6, 6])
        #expect(start.points == ["0", "0"])
        #expect(start.server == .home)

        // Home serves point 1, then away 2-3, home 4-5, away 6-7, ...
        let points = tiebreak(.home, 7, 4)
        var sequence = sixAll
        for (index, point) in points.enumerated() {
            let served = try derive(sequence).server
            let expected: Side = (index + 1) / 2 % 2 == 0 ? .home : .away
            #expect(served == expected, "tiebreak point \(index + 1)")
            sequence.append(point)
        }

        let mid = try derive(sixAll + "HHHAHA")
        #expect(mid.points == ["4", "2"])
        #expect(mid.tiebreak)

        let done = try derive(sequence)
        #expect(done.sets == [[7, 6], [0, 0]])
        #expect(done.tiebreakScores == [[7, 4]])
        #expect(!done.tiebreak)
        #expect(done.breaks == [0, 0])
        #expect(done.gamesPlayed == 13)
        // Away received the first tiebreak point, so away opens set two.
        #expect(done.server == .away)
    }

    @Test func tiebreakNeedsTwoPointLead() throws {
        let state = try derive(holds(12) + tiebreak(.away, 9, 7))
        #expect(state.tiebreakScores == [[7, 9]])
        #expect(state.sets == [[6, 7], [0, 0]])
        #expect(try derive(holds(12) + "HAHAHAHAHAHAHA").points == ["7", "7"])
    }

    @Test func serverAfterTiebreakWhenReceiverOpenedIt() throws {
        // Away serves first, so away also serves the tiebreak's first point.
        let rules = TennisRules(bestOf: 3, firstServer: .away, finalSetTiebreak: 7)
        let sixAll = holds(12, firstServer: .away)
        #expect(try derive(sixAll, rules).server == .away)
        let state = try derive(sixAll + tiebreak(.away, 7, 0), rules)
        #expect(state.sets == [[6, 7], [0, 0]])
        #expect(state.server == .home)
    }

    @Test func tenPointFinalSetTiebreak() throws {
        let rules = TennisRules(bestOf: 3, firstServer: .home, finalSetTiebreak: 10)
        // Set one still has a 7-point tiebreak; only the deciding set differs.
        let firstSet = holds(12) + tiebreak(.home, 7, 5)
        let secondSet = bagel(.away)
        let sixAll = holds(12, firstServer: .away)
        let beforeFinal = try derive(firstSet + secondSet + sixAll, rules)
        #expect(beforeFinal.tiebreak)
        #expect(beforeFinal.sets == [[7, 6], [0, 6], [6, 6]])

        let sevenFive = try derive(firstSet + secondSet + sixAll + tiebreak(.away, 7, 5), rules)
        #expect(sevenFive.winner == nil)
        #expect(sevenFive.points == ["5", "7"])

        let done = try derive(firstSet + secondSet + sixAll + tiebreak(.away, 10, 6), rules)
        #expect(done.winner == .away)
        #expect(done.sets == [[7, 6], [0, 6], [6, 7]])
        #expect(done.tiebreakScores == [[7, 5], nil, [6, 10]])
    }

    @Test func advantageFinalSet() throws {
        let rules = TennisRules(bestOf: 3, firstServer: .home, finalSetTiebreak: 0)
        let twoSets = bagel(.home) + bagel(.away)
        let sixAll = try derive(twoSets + holds(12), rules)
        #expect(!sixAll.tiebreak)
        #expect(sixAll.sets == [[6, 0], [0, 6], [6, 6]])
        #expect(try derive(twoSets + holds(12) + "H", rules).points == ["15", "0"])

        let sevenSix = try derive(twoSets + holds(12) + game(.home), rules)
        #expect(sevenSix.winner == nil)
        #expect(sevenSix.games == [7, 6])

        let done = try derive(twoSets + holds(12) + game(.home) + game(.home), rules)
        #expect(done.winner == .home)
        #expect(done.sets == [[6, 0], [0, 6], [8, 6]])
        #expect(done.games == [8, 6])
        #expect(done.tiebreakScores == [nil, nil, nil])
    }

    @Test func bestOfFive() throws {
        let rules = TennisRules(bestOf: 5, firstServer: .home, finalSetTiebreak: 0)
        let twoAll = bagel(.home) + bagel(.away) + bagel(.home) + bagel(.away)
        #expect(try derive(twoAll, rules).winner == nil)
        #expect(try derive(twoAll, rules).setsWon == [2, 2])
        // Set three of five is not the deciding set: it keeps its tiebreak.
        let thirdSetTiebreak = try derive(bagel(.home) + bagel(.away) + holds(12), rules)
        #expect(thirdSetTiebreak.tiebreak)
        let done = try derive(twoAll + bagel(.away), rules)
        #expect(done.winner == .away)
        #expect(done.setsWon == [2, 3])
        #expect(done.sets.count == 5)
    }

    @Test func winnerAndFinalState() throws {
        let state = try derive(bagel(.home) + holds(8) + game(.home) + game(.home))
        #expect(state.winner == .home)
        #expect(state.sets == [[6, 0], [6, 4]])
        #expect(state.games == [6, 4])
        #expect(state.points == ["0", "0"])
        #expect(!state.tiebreak)
        #expect(state.setsWon == [2, 0])
        #expect(state.pointsPlayed == 64)
    }

    @Test func sideSequenceOverloadAgrees() throws {
        let text = bagel(.home) + holds(12) + tiebreak(.away, 8, 6) + "HHA"
        let sides: [Side] = text.map { $0 == "H" ? .home : .away }
        #expect(try TennisEngine.derive(points: sides, rules: Self.bestOfThree) == derive(text))
    }

    @Test func rejectsInvalidCharacter() {
        #expect(throws: TennisError.invalidCharacter("x", at: 3)) { try derive("HHAxH") }
        #expect(throws: TennisError.invalidCharacter("é", at: 1)) { try derive("Hé") }
        do {
            _ = try derive("HH A")
            Issue.record("expected an error")
        } catch {
            #expect(error.description == #"invalid character " " at index 2"#)
            #expect(error.index == 2)
        }
    }

    @Test func rejectsPointsAfterMatchEnd() {
        let match = bagel(.away) + bagel(.away)
        #expect(throws: TennisError.pointAfterMatchEnd(at: 48)) { try derive(match + "HA") }
        #expect(throws: TennisError.pointAfterMatchEnd(at: 48)) {
            try TennisEngine.derive(points: Array(repeating: Side.away, count: 49), rules: Self.bestOfThree)
        }
        #expect(TennisError.pointAfterMatchEnd(at: 48).description.contains("index 48"))
    }

    @Test func rejectsInvalidRules() {
        #expect(throws: TennisError.invalidBestOf(4)) {
            try derive("", TennisRules(bestOf: 4, firstServer: .home, finalSetTiebreak: 7))
        }
        #expect(throws: TennisError.invalidFinalSetTiebreak(12)) {
            try derive("", TennisRules(bestOf: 5, firstServer: .home, finalSetTiebreak: 12))
        }
        #expect(TennisError.invalidBestOf(4).description.contains("bestOf"))
    }
}
