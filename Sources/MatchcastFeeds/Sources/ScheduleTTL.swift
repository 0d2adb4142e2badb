import MatchcastCore

/// How long a cached schedule for today stays fresh, by the state of its matches.
///
/// A day with a match in progress changes often (status, scores); a day that is over does not.
public struct ScheduleTTL: Sendable, Hashable {
    /// Any match live or at a break.
    public var live: Duration
    /// Nothing in progress and not everything final: upcoming, postponed, or an empty day.
    public var upcoming: Duration
    /// Every match final.
    public var final: Duration

    public init(live: Duration = .seconds(60), upcoming: Duration = .seconds(600), final: Duration = .seconds(6 * 3600)) {
        self.live = live
        self.upcoming = upcoming
        self.final = final
    }

    /// The TTL for a schedule holding `matches`. An empty day counts as upcoming: matches may still be added.
    public func ttl(for matches: [MatchSnapshot]) -> Duration {
        if matches.contains(where: { $0.status.isInProgress }) { return live }
        if !matches.isEmpty && matches.allSatisfy({ $0.status.isFinal }) { return final }
        return upcoming
    }
}
