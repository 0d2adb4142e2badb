/// Baseball progress in outs, read from `inning` ("Top 7th", "Bot 9th") and `outs` ("1 out", "2 outs").
///
/// Nine innings of six outs (three a half); an extra inning adds a segment once it has begun, as it is the
/// same six outs. The position counts the outs made: the halves before this one, plus this half's outs.
/// Outs that cannot be read count as none; an inning that cannot be read gives no progress.
enum BaseballProgress {
    static let regulation = Array(repeating: 6, count: 9)

    static func progress(_ state: ContentState) -> LiveSurface.Progress? {
        guard let inning = state.inning.flatMap(half) else { return nil }
        let outs = state.outs.flatMap(outs) ?? 0
        let segments = Array(repeating: 6, count: max(9, inning.number))
        let position = (inning.number - 1) * 6 + (inning.bottom ? 3 : 0) + outs
        return .marked(.outs, segments, at: position)
    }

    /// "Top 7th" is (7, false), "Bot 10th" (10, true): exactly as `BaseballRender.inning` writes them.
    private static func half(_ text: String) -> (number: Int, bottom: Bool)? {
        let words = text.split(separator: " ", omittingEmptySubsequences: false)
        guard words.count == 2, words[0] == "Top" || words[0] == "Bot" else { return nil }
        let digits = words[1].prefix { $0.isASCII && $0.isWholeNumber }
        guard let number = DisplayText.number(digits, maxDigits: 2), (1...99).contains(number),
              BaseballRender.ordinal(number) == words[1]
        else { return nil }
        return (number, words[0] == "Bot")
    }

    /// "1 out", "2 outs": 0...3.
    private static func outs(_ text: String) -> Int? {
        let words = text.split(separator: " ", omittingEmptySubsequences: false)
        guard words.count == 2, words[1] == "out" || words[1] == "outs",
              let outs = DisplayText.number(words[0], maxDigits: 1), outs <= 3
        else { return nil }
        return outs
    }
}
