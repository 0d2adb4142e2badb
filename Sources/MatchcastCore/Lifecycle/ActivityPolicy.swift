/// Timing rules of every activity, from configuration.
public struct ActivityPolicy: Sendable, Hashable, Codable {
    /// Routine (priority 5) updates are sent at most once per this interval per activity; latest wins.
    public var coalesceInterval: Duration
    /// stale-date = now + this many poll intervals ...
    public var staleAfterPolls: Int
    /// ... but never sooner than this, so coalescing and slow feeds do not mark a healthy activity stale.
    public var minimumStaleness: Duration
    /// How long an ended activity stays on the Lock Screen (Apple allows at most 4 hours).
    public var dismissalDelay: Duration
    /// An activity this old is ended and started again (Apple ends them at 8 hours).
    public var restartAfter: Duration
    /// How long APNs may keep trying a `start`.
    public var startExpiration: Duration
    /// The most priority-10 pushes a match's activities are sent in any hour for its key events; key events past it
    /// go at priority 5 (`HighPriorityLedger`).
    public var highPriorityPerHour: Int

    public init(
        coalesceInterval: Duration = .seconds(10),
        staleAfterPolls: Int = 4,
        minimumStaleness: Duration = .seconds(120),
        dismissalDelay: Duration = .seconds(15 * 60),
        restartAfter: Duration = .seconds(7 * 3600 + 45 * 60),
        startExpiration: Duration = .seconds(30 * 60),
        highPriorityPerHour: Int = defaultHighPriorityPerHour
    ) {
        self.coalesceInterval = coalesceInterval
        self.staleAfterPolls = staleAfterPolls
        self.minimumStaleness = minimumStaleness
        self.dismissalDelay = min(dismissalDelay, Self.maxDismissalDelay)
        self.restartAfter = restartAfter
        self.startExpiration = startExpiration
        self.highPriorityPerHour = max(0, highPriorityPerHour)
    }

    /// The default of `highPriorityPerHour`: docs/operations.md says how it was chosen.
    public static let defaultHighPriorityPerHour = 24

    /// Apple keeps an ended activity on the Lock Screen for at most four hours.
    public static let maxDismissalDelay: Duration = .seconds(4 * 3600)
    /// How long APNs keeps trying an `end`: long, because an end must not be lost.
    static let endExpiration: Duration = .seconds(8 * 3600)

    func staleness(pollInterval: Duration) -> Duration {
        max(pollInterval * staleAfterPolls, minimumStaleness)
    }
}
