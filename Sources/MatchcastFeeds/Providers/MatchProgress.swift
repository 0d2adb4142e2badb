import Foundation
import MatchcastCore

/// How far a match has gone, compared across providers by what a device shows: stage (not begun, in play, over),
/// each side's score, the period and the clock. Providers' own `seq` numbers are never compared: each counts its own
/// way.
package enum MatchProgress {
    /// How far a clock may read earlier than the one shown and still count as level: two providers' clocks of the
    /// same moment differ by their polling and processing lag.
    static let clockTolerance = 30.0

    /// Whether `candidate` shows the match earlier than `shown`: an earlier stage, a lower score for either side, an
    /// earlier period, or a clock more than `clockTolerance` seconds earlier in the same period. A candidate that
    /// cannot be compared on some part (a period label neither side shares) is judged on the rest.
    package static func isBehind(_ candidate: MatchSnapshot, _ shown: MatchSnapshot) -> Bool {
        let (newStage, oldStage) = (stage(candidate.status), stage(shown.status))
        if newStage < oldStage { return true }
        switch (candidate.score, shown.score) {
        case (.teamTotals(let new), .teamTotals(let old)):
            if new.home < old.home || new.away < old.away { return true }
            guard newStage == oldStage, newStage == 1 else { return false }
            return isBehind(period: new.period, clock: new.clock, than: old.period, old.clock, sport: candidate.sport)
        case (.baseball(let new), .baseball(let old)):
            if new.home < old.home || new.away < old.away { return true }
            guard newStage == oldStage, newStage == 1 else { return false }
            let newAt = (new.inning, new.half == .top ? 0 : 1, new.outs)
            let oldAt = (old.inning, old.half == .top ? 0 : 1, old.outs)
            return newAt < oldAt
        case (.tennis(let new), .tennis(let old)):
            return new.points.utf8.count < old.points.utf8.count
        case (.cricket(let new), .cricket(let old)):
            if new.innings.count != old.innings.count { return new.innings.count < old.innings.count }
            guard let newest = new.innings.last, let held = old.innings.last else { return false }
            return newest.runs < held.runs || newest.wickets < held.wickets || newest.balls < held.balls
        default:
            return false
        }
    }

    /// 0 before the match (scheduled, postponed), 1 in play (live, break), 2 over.
    static func stage(_ status: MatchStatus) -> Int {
        switch status {
        case .scheduled, .postponed: 0
        case .live, .break: 1
        case .completed, .abandoned: 2
        }
    }

    private static func isBehind(period: String?, clock: String?, than oldPeriod: String?, _ oldClock: String?, sport: Sport) -> Bool {
        guard let new = period.flatMap(periodOrder), let old = oldPeriod.flatMap(periodOrder) else { return false }
        if new != old { return new < old }
        guard let newElapsed = clock.flatMap({ elapsed($0, sport: sport) }),
            let oldElapsed = oldClock.flatMap({ elapsed($0, sport: sport) })
        else { return false }
        return newElapsed + clockTolerance < oldElapsed
    }

    /// The order of a period label as the adapters and native feeds write them (`1H`, `HT`, `2H`, `ET`, `PEN`, `Q3`,
    /// `P2`, `OT`, `2OT`, `SO`); nil for a label it does not know.
    static func periodOrder(_ label: String) -> Double? {
        let text = label.uppercased().trimmingCharacters(in: .whitespaces)
        switch text {
        case "HT": return 1.5
        case "ET": return 3
        case "PEN": return 4
        case "OT": return 101
        case "SO": return 200
        default: break
        }
        if text.hasSuffix("OT"), let number = Int(text.dropLast(2)), number > 0 { return 100 + Double(number) }
        if text.hasSuffix("H"), let number = Int(text.dropLast()), number > 0 { return Double(number) }
        if let first = text.first, first == "Q" || first == "P", let number = Int(text.dropFirst()), number > 0 {
            return Double(number)
        }
        return nil
    }

    /// Seconds played in the period: football's clock counts up (`67'`, `45'+2'`), the others' count down (`04:12`
    /// left), so theirs is negated to grow as play goes on.
    static func elapsed(_ clock: String, sport: Sport) -> Double? {
        if sport == .football {
            var total = 0.0
            var any = false
            for part in clock.split(separator: "+") {
                let digits = part.filter(\.isNumber)
                guard !digits.isEmpty, let minutes = Double(digits) else { return nil }
                total += minutes * 60
                any = true
            }
            return any ? total : nil
        }
        let parts = clock.split(separator: ":")
        guard parts.count == 2, let minutes = Double(parts[0]), let seconds = Double(parts[1]) else {
            return Double(clock).map { -$0 }
        }
        return -(minutes * 60 + seconds)
    }
}
