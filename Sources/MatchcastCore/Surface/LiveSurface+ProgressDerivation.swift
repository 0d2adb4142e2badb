extension LiveSurface.Progress {
    /// The progress a content-state shows, or nil when it cannot be told with confidence.
    ///
    /// Read only from the content-state's own strings (made by this project's renderers), never guessed:
    /// - a completed match is a full bar: its regulation shape when the sport's is fixed (football 2×45 min,
    ///   hockey 3×20 min, American football 4×15 min, baseball 9 innings of 6 outs, tennis one segment per set
    ///   of the best-of its winner's sets imply), else one segment (`match`);
    /// - a live match or one in a break, per sport: `TeamTotalsProgress`, `BaseballProgress`,
    ///   `TennisProgress`, `CricketProgress` say what each reads and when it gives up;
    /// - scheduled, postponed and abandoned matches have none (an abandoned match did not run its course).
    ///
    /// - Parameter sport: when nil, the family is told by the fields the content-state carries (`sets`:
    ///   tennis, `inning`: baseball, the cricket fields: cricket); a period and clock alone do not say which
    ///   sport, so they give no progress.
    public init?(contentState state: ContentState, sport: Sport?) {
        guard let status = MatchStatus(rawValue: state.status) else { return nil }
        let family = Family(sport: sport, state: state)
        let progress: Self?
        switch status {
        case .completed:
            progress = Self.finished(family, state)
        case .live, .break:
            switch family {
            case .totals(let sport?): progress = TeamTotalsProgress.progress(sport, state, status: status)
            case .baseball: progress = BaseballProgress.progress(state)
            case .tennis: progress = TennisProgress.progress(state)
            case .cricket: progress = CricketProgress.progress(state)
            case .totals(nil), .unknown: progress = nil
            }
        case .scheduled, .postponed, .abandoned:
            progress = nil
        }
        guard let progress else { return nil }
        self = progress
    }

    /// A completed match: its regulation shape, full.
    private static func finished(_ family: Family, _ state: ContentState) -> Self {
        switch family {
        case .totals(.football?): return .finished(.minutes, TeamTotalsProgress.football)
        case .totals(.hockey?): return .finished(.minutes, TeamTotalsProgress.hockey)
        case .totals(.americanFootball?): return .finished(.minutes, TeamTotalsProgress.americanFootball)
        case .baseball: return .finished(.outs, BaseballProgress.regulation)
        case .tennis: return TennisProgress.decided(state) ?? .finishedMatch
        // Basketball is played in quarters or halves and a final label does not say which; a cricket
        // content-state does not carry the overs limit.
        case .totals, .cricket, .unknown: return .finishedMatch
        }
    }

    /// The sport family a content-state belongs to.
    enum Family: Equatable {
        case totals(Sport?)
        case baseball
        case tennis
        case cricket
        case unknown

        init(sport: Sport?, state: ContentState) {
            switch sport {
            case .cricket?: self = .cricket
            case .tennis?: self = .tennis
            case .baseball?: self = .baseball
            case .football?, .basketball?, .hockey?, .americanFootball?: self = .totals(sport)
            case nil:
                if state.sets != nil {
                    self = .tennis
                } else if state.inning != nil {
                    self = .baseball
                } else if state.batting != nil || state.runRate != nil || state.equation != nil || state.bowler != nil {
                    self = .cricket
                } else if state.period != nil || state.clock != nil {
                    self = .totals(nil)
                } else {
                    self = .unknown
                }
            }
        }
    }
}
