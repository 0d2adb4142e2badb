import Foundation

/// Progress of football, hockey, American football and basketball, read from `period` and `clock`.
///
/// The period labels are the ones this project's feeds write (`1H`/`2H`/`HT`/`ET` for football, `P1`...`P3`
/// for hockey, `Q1`...`Q4` for American football and basketball, `1H`/`2H` for basketball played in halves),
/// compared without regard to case or surrounding spaces. Rules:
/// - football: 2×45 minutes; the clock's minute within the half ("67'", stoppage time at the half's end);
///   `HT` is 45; `ET` is extra time, 2×45 + 2×15, the clock's minute within it;
/// - hockey 3×20 and American football 4×15 minutes: the clock counts down what is left of the period
///   ("04:12"), so the position is the period's start plus the time played;
/// - basketball: quarters or halves of a length no label says (12 or 10 minutes, 20 in halves), so the unit
///   is the period and the position its start; `HT` says neither shape, so none;
/// - in a break the period named is over: the position is its end;
/// - a clock that is missing or unreadable leaves the position at the period's start;
/// - overtime, shootouts, penalties and any other label: none (how long they last is not known).
enum TeamTotalsProgress {
    static let football = [45, 45]
    static let footballExtraTime = [45, 45, 15, 15]
    static let hockey = [20, 20, 20]
    static let americanFootball = [15, 15, 15, 15]

    static func progress(_ sport: Sport, _ state: ContentState, status: MatchStatus) -> LiveSurface.Progress? {
        guard let period = state.period.map(label) else { return nil }
        let clock = state.clock.map { $0.trimmingCharacters(in: .whitespaces) }
        let inBreak = status == .break
        switch sport {
        case .football:
            if period == "HT" { return .marked(.minutes, football, at: 45) }
            if period == "ET" {
                guard !inBreak else { return nil }
                let minute = clock.flatMap(DisplayText.footballMinute) ?? 90
                return .marked(.minutes, footballExtraTime, at: min(max(minute, 90), 120))
            }
            guard let index = half(period) else { return nil }
            let start = index * 45
            if inBreak { return .marked(.minutes, football, at: start + 45) }
            let minute = clock.flatMap(DisplayText.footballMinute) ?? start
            return .marked(.minutes, football, at: min(max(minute, start), start + 45))
        case .hockey:
            guard let index = numbered(period, prefix: "P", count: 3) else { return nil }
            return countdown(hockey, index: index, clock: clock, inBreak: inBreak)
        case .americanFootball:
            if period == "HT" { return .marked(.minutes, americanFootball, at: 30) }
            guard let index = numbered(period, prefix: "Q", count: 4) else { return nil }
            return countdown(americanFootball, index: index, clock: clock, inBreak: inBreak)
        case .basketball:
            let shape: (index: Int, count: Int)
            if let index = numbered(period, prefix: "Q", count: 4) {
                shape = (index, 4)
            } else if let index = half(period) {
                shape = (index, 2)
            } else {
                return nil
            }
            return .marked(.periods, Array(repeating: 1, count: shape.count), at: shape.index + (inBreak ? 1 : 0))
        case .cricket, .tennis, .baseball:
            return nil
        }
    }

    /// Periods of fixed minutes whose clock shows the time left: the period's start plus the time played.
    private static func countdown(_ segments: [Int], index: Int, clock: String?, inBreak: Bool) -> LiveSurface.Progress {
        let length = segments[index]
        let start = segments.prefix(index).reduce(0, +)
        if inBreak { return .marked(.minutes, segments, at: start + length) }
        guard let left = clock.flatMap(DisplayText.clockSeconds), left <= length * 60 else {
            return .marked(.minutes, segments, at: start)
        }
        return .marked(.minutes, segments, at: start + (length * 60 - left) / 60)
    }

    private static func label(_ text: String) -> String {
        text.trimmingCharacters(in: .whitespaces).uppercased()
    }

    /// 0 for `1H`/`H1`, 1 for `2H`/`H2`.
    private static func half(_ period: String) -> Int? {
        switch period {
        case "1H", "H1": 0
        case "2H", "H2": 1
        default: nil
        }
    }

    /// 0-based index of `P2` or `Q3`: the prefix and one digit in 1...count.
    private static func numbered(_ period: String, prefix: Character, count: Int) -> Int? {
        guard period.first == prefix, let number = DisplayText.number(period.dropFirst(), maxDigits: 1),
              (1...count).contains(number)
        else { return nil }
        return number - 1
    }
}
