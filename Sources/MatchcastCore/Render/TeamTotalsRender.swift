/// Display strings for sports scored as two totals with a period and a clock.
enum TeamTotalsRender {
    static func apply(_ snapshot: MatchSnapshot, _ score: TeamScore, to state: inout ContentState) {
        state.home.score = String(score.home)
        state.away.score = String(score.away)
        state.period = score.period
        state.clock = score.clock
        var summary = "\(snapshot.home.short) \(score.home)-\(score.away) \(snapshot.away.short)"
        if !snapshot.status.isFinal {
            let when = [score.period, score.clock].compactMap { $0 }.filter { !$0.isEmpty }.joined(separator: " ")
            if !when.isEmpty { summary += " · " + when }
        }
        state.summary = summary
    }

    static func derived(_ score: TeamScore) -> TotalsDerived {
        TotalsDerived(home: score.home, away: score.away, period: score.period, clock: score.clock)
    }
}
