/// Display strings for tennis, from the state derived from the point sequence.
enum TennisRender {
    static func apply(_ snapshot: MatchSnapshot, _ state: TennisState, to content: inout ContentState) {
        let setScores = setStrings(state)
        content.sets = setScores.joined(separator: " ")
        content.home.score = state.sets.map { String($0[0]) }.joined(separator: " ")
        content.away.score = state.sets.map { String($0[1]) }.joined(separator: " ")
        if state.winner == nil && snapshot.status.isInProgress {
            content.game = "\(state.points[0])-\(state.points[1])"
            content.serving = state.server
            content.summary = [content.sets!, content.game!].filter { !$0.isEmpty }.joined(separator: " · ")
        } else {
            content.summary = content.sets!.isEmpty ? "\(snapshot.home.short) v \(snapshot.away.short)" : content.sets!
        }
        if let winner = state.winner {
            // Read from the winner's side, as results are quoted: "won 6-4 3-6 7-6(5)".
            let fromWinner = winner == .home ? setScores : setStrings(state, flipped: true)
            content.result = "\(snapshot.team(winner).name) won \(fromWinner.joined(separator: " "))"
        }
    }

    /// "6-4", "7-6(4)" for completed sets (tiebreak points of the set's loser), "3-2" for the current one.
    static func setStrings(_ state: TennisState, flipped: Bool = false) -> [String] {
        state.sets.enumerated().map { index, games in
            var text = flipped ? "\(games[1])-\(games[0])" : "\(games[0])-\(games[1])"
            if index < state.tiebreakScores.count, let tiebreak = state.tiebreakScores[index] {
                text += "(\(min(tiebreak[0], tiebreak[1])))"
            }
            return text
        }
    }
}
