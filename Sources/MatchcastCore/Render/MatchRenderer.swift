/// A snapshot turned into what a device shows, with the machine-readable score behind it.
public struct RenderedMatch: Sendable, Hashable {
    public let snapshot: MatchSnapshot
    public let contentState: ContentState
    public let derived: Derived
    /// The derived tennis state, kept so key events can compare two of them.
    public let tennis: TennisState?
}

/// Builds content-states from snapshots: the only place display strings are made.
public enum MatchRenderer {
    /// Renders one snapshot. Throws when the score cannot be interpreted (a tennis point sequence
    /// that goes on after match point); the caller treats that as a per-match error.
    public static func render(_ snapshot: MatchSnapshot) throws(InputError) -> RenderedMatch {
        var state = ContentState(
            status: snapshot.status.rawValue,
            statusText: statusText(snapshot),
            home: .init(name: snapshot.home.short, score: ""),
            away: .init(name: snapshot.away.short, score: ""),
            summary: ""
        )
        let derived: Derived
        var tennis: TennisState?
        switch snapshot.score {
        case .cricket(let score):
            CricketRender.apply(snapshot, score, to: &state)
            derived = .cricket(CricketRender.derived(snapshot, score))
        case .tennis(let score):
            let tennisState: TennisState
            do {
                tennisState = try TennisEngine.derive(points: score.points, rules: score.rules)
            } catch {
                throw InputError(field: "score.points", reason: error.description)
            }
            TennisRender.apply(snapshot, tennisState, to: &state)
            derived = .tennis(TennisDerived(tennisState))
            tennis = tennisState
        case .teamTotals(let score):
            TeamTotalsRender.apply(snapshot, score, to: &state)
            derived = .totals(TeamTotalsRender.derived(score))
        case .baseball(let score):
            BaseballRender.apply(snapshot, score, to: &state)
            derived = .totals(BaseballRender.derived(score))
        }
        if snapshot.status == .abandoned && state.result == nil { state.result = "Abandoned" }
        if snapshot.status == .completed && state.result == nil, case .totals(let totals) = derived {
            state.result = totalsResult(snapshot, home: totals.home, away: totals.away)
        }
        return RenderedMatch(snapshot: snapshot, contentState: state, derived: derived, tennis: tennis)
    }

    static func statusText(_ snapshot: MatchSnapshot) -> String {
        switch snapshot.status {
        case .scheduled: "Scheduled"
        case .live: "Live"
        case .break:
            switch snapshot.sport {
            case .cricket: "Innings break"
            case .football: "Half-time"
            case .tennis: "Suspended"
            default: "Break"
            }
        case .completed: "Final"
        case .abandoned: "Abandoned"
        case .postponed: "Postponed"
        }
    }

    static func totalsResult(_ snapshot: MatchSnapshot, home: Int, away: Int) -> String {
        if home == away { return "Draw \(home)-\(away)" }
        let winner = home > away ? snapshot.home : snapshot.away
        return "\(winner.name) won \(max(home, away))-\(min(home, away))"
    }
}
