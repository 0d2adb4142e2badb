import MatchcastCore

/// Period labels, clocks and progress for hockey, shared by the api-web and legacy statsapi converters.
enum NHLPeriod {
    /// Periods a feed may number: regulation, overtimes (playoff games have gone to a sixth) and a shootout.
    static let numbers = 0...20

    /// `P1`...`P3` in regulation, `OT`, `2OT`... in overtime, `SO` for a shootout; nil before the first period.
    ///
    /// - Parameter type: `REG`/`OT`/`SO` (api-web) or `REGULAR`/`OVERTIME`/`SHOOTOUT` (statsapi); when it is
    ///   missing or unknown the number alone decides (past the regulation periods is overtime).
    static func label(number: Int, type: String?, regulationPeriods: Int = 3) -> String? {
        guard number >= 1 else { return nil }
        let regulation = max(regulationPeriods, 1)
        let overtime = { (number: Int) -> String in
            let index = number - regulation
            return index <= 1 ? "OT" : "\(index)OT"
        }
        switch type?.uppercased() {
        case "SO", "SHOOTOUT": return "SO"
        case "OT", "OVERTIME": return overtime(number)
        case "REG", "REGULAR": return "P\(number)"
        default: return number > regulation ? overtime(number) : "P\(number)"
        }
    }

    /// Seconds in a `mm:ss` clock (`09:03` is 543), or nil when the text is not one.
    static func seconds(_ clock: String) -> Int? {
        let parts = clock.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 2, (1...3).contains(parts[0].count), parts[1].count == 2,
            parts.allSatisfy({ $0.utf8.allSatisfy { $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") } }),
            let minutes = Int(parts[0]), let seconds = Int(parts[1]), seconds < 60
        else { return nil }
        return minutes * 60 + seconds
    }

    /// `09:03` for 543 seconds.
    static func clockText(seconds: Int) -> String {
        let minutes = seconds / 60
        let rest = seconds % 60
        return (minutes < 10 ? "0" : "") + "\(minutes):" + (rest < 10 ? "0" : "") + "\(rest)"
    }

    /// A `seq` that grows as the game moves on and reads the same from every api-web document of
    /// one moment, so the score list and the play-by-play can be compared:
    /// stage × 1 000 000 + period × 10 000 + (9 999 − seconds left in the period).
    /// Stage is 0 before (or instead of) the game, 1 while it is played, 2 once it is over; an
    /// intermission or a finished game counts as the end of its period.
    static func progress(status: MatchStatus, period: Int, secondsRemaining: Int?) -> Int {
        let stage: Int
        switch status {
        case .scheduled, .postponed: return 0
        case .live, .break: stage = 1
        case .completed, .abandoned: stage = 2
        }
        let left = status == .live ? min(max(secondsRemaining ?? 0, 0), 9_999) : 0
        return stage * 1_000_000 + min(max(period, 0), numbers.upperBound) * 10_000 + (9_999 - left)
    }
}
