/// Limited-overs cricket progress in balls, read from a chase's `equation` and the two score lines.
///
/// A content-state does not carry the overs limit, so only a chase tells it: "Need 78 off 34" with the
/// batting side at "87/6 (14.2)" (86 balls) is an innings of 120 balls. The bar is two such innings; the
/// first is as long as the chase's unless its own overs ran longer (a chase shortened by rain), and is
/// complete. Everything else gives none: a first innings and the break after it (T20 and ODI read alike),
/// Tests (no fixed length), super overs (marked "SO"), and a chase already won or lost (no equation).
enum CricketProgress {
    static func progress(_ state: ContentState) -> LiveSurface.Progress? {
        guard let equation = state.equation, let need = ballsNeeded(equation), let batting = state.batting,
              !state.home.score.contains("SO"), !state.away.score.contains("SO")
        else { return nil }
        let sides = [state.home, state.away]
        guard sides.filter({ $0.name == batting }).count == 1,
              let chasing = sides.first(where: { $0.name == batting }),
              let first = sides.first(where: { $0.name != batting }),
              let bowled = balls(chasing.score), let firstBalls = balls(first.score)
        else { return nil }
        let innings = bowled + need
        guard innings > 0, innings % 6 == 0, innings <= 600 else { return nil }
        let firstInnings = max(innings, firstBalls)
        return .marked(.balls, [firstInnings, innings], at: firstInnings + bowled)
    }

    /// "Need 78 off 34" is 34; a Test's "Need 78 to win" or anything else is nil.
    private static func ballsNeeded(_ equation: String) -> Int? {
        let words = equation.split(separator: " ", omittingEmptySubsequences: false)
        guard words.count == 4, words[0] == "Need", words[2] == "off", DisplayText.number(words[1], maxDigits: 5) != nil
        else { return nil }
        return DisplayText.number(words[3], maxDigits: 3)
    }

    /// Legal balls in the overs that end a score line: "87/6 (14.2)" is 86, "241 (50.0)" is 300.
    private static func balls(_ score: String) -> Int? {
        guard score.hasSuffix(")"), let open = score.lastIndex(of: "(") else { return nil }
        let overs = score[score.index(after: open)...].dropLast().split(separator: ".", omittingEmptySubsequences: false)
        guard overs.count == 2, let whole = DisplayText.number(overs[0], maxDigits: 3),
              let part = DisplayText.number(overs[1], maxDigits: 1), part < 6
        else { return nil }
        return whole * 6 + part
    }
}
