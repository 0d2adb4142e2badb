/// Tennis progress in sets, read from `sets` ("6-4 7-6(5) 3-2") and `result`.
///
/// One segment per set of the match's best-of, which a content-state does not state; it is known only when
/// the sets say it:
/// - decided (a `result`): the winner took 2 sets (best of 3) or 3 (best of 5); the bar is full;
/// - undecided: the last set listed is the one in play, the others are completed. A side with 2 sets, or
///   3 sets completed, can only be best of 5. Otherwise (best of 3 and best of 5 read alike) none.
/// The position is the number of completed sets.
enum TennisProgress {
    static func progress(_ state: ContentState) -> LiveSurface.Progress? {
        if state.result != nil { return decided(state) }
        guard let sets = state.sets.flatMap(games), !sets.isEmpty else { return nil }
        let completed = sets.dropLast()
        guard completed.allSatisfy({ $0.home != $0.away }) else { return nil }
        let won = (home: completed.filter { $0.home > $0.away }.count, away: completed.filter { $0.away > $0.home }.count)
        // An undecided match where a side already has the sets to win is not one the renderer writes.
        guard max(won.home, won.away) <= 2, completed.count <= 4 else { return nil }
        guard max(won.home, won.away) == 2 || completed.count >= 3 else { return nil }
        return .marked(.sets, Array(repeating: 1, count: 5), at: completed.count)
    }

    /// A decided match: one segment per set of the best-of the winner's sets imply, full.
    static func decided(_ state: ContentState) -> LiveSurface.Progress? {
        guard let sets = state.sets.flatMap(games), sets.allSatisfy({ $0.home != $0.away }) else { return nil }
        let won = max(sets.filter { $0.home > $0.away }.count, sets.filter { $0.away > $0.home }.count)
        guard won == 2 || won == 3, sets.count <= won * 2 - 1 else { return nil }
        return .finished(.sets, Array(repeating: 1, count: won * 2 - 1))
    }

    /// "6-4 7-6(5) 3-2" as games per set; nil when any set is not `games-games` with an optional `(points)`.
    private static func games(_ text: String) -> [(home: Int, away: Int)]? {
        guard !text.isEmpty else { return nil }
        var sets: [(home: Int, away: Int)] = []
        for word in text.split(separator: " ", omittingEmptySubsequences: false) {
            var score = word
            if let open = score.firstIndex(of: "(") {
                guard score.last == ")",
                      DisplayText.number(score[score.index(after: open)..<score.index(before: score.endIndex)], maxDigits: 3) != nil
                else { return nil }
                score = score[..<open]
            }
            let sides = score.split(separator: "-", omittingEmptySubsequences: false)
            guard sides.count == 2, let home = DisplayText.number(sides[0], maxDigits: 3),
                  let away = DisplayText.number(sides[1], maxDigits: 3)
            else { return nil }
            sets.append((home, away))
        }
        guard sets.count <= 5 else { return nil }
        return sets
    }
}
