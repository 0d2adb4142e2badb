/// Display strings for baseball: "Top 7th", "1 out", "Runners on 1st & 3rd".
enum BaseballRender {
    static func apply(_ snapshot: MatchSnapshot, _ score: BaseballScore, to state: inout ContentState) {
        state.home.score = String(score.home)
        state.away.score = String(score.away)
        var summary = "\(snapshot.away.short) \(score.away)-\(score.home) \(snapshot.home.short)"
        if !snapshot.status.isFinal && snapshot.status != .scheduled {
            state.inning = inning(score)
            state.outs = score.outs == 1 ? "1 out" : "\(score.outs) outs"
            state.bases = bases(score.bases)
            summary += " · \(state.inning!), \(state.outs!)"
        }
        state.summary = summary
    }

    static func derived(_ score: BaseballScore) -> TotalsDerived {
        var derived = TotalsDerived(home: score.home, away: score.away, period: inning(score), clock: nil)
        derived.inning = score.inning
        derived.half = score.half.rawValue
        derived.outs = score.outs
        derived.bases = score.bases
        return derived
    }

    static func inning(_ score: BaseballScore) -> String {
        (score.half == .top ? "Top " : "Bot ") + ordinal(score.inning)
    }

    static func ordinal(_ n: Int) -> String {
        let suffix: String
        switch (n % 10, n % 100) {
        case (_, 11...13): suffix = "th"
        case (1, _): suffix = "st"
        case (2, _): suffix = "nd"
        case (3, _): suffix = "rd"
        default: suffix = "th"
        }
        return "\(n)\(suffix)"
    }

    static func bases(_ bases: [Bool]) -> String {
        let names = ["1st", "2nd", "3rd"]
        let occupied = zip(names, bases).filter(\.1).map(\.0)
        switch occupied.count {
        case 0: return "Bases empty"
        case 1: return "Runner on \(occupied[0])"
        case 3: return "Bases loaded"
        default: return "Runners on \(occupied.joined(separator: " & "))"
        }
    }
}
