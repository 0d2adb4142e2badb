import MatchcastCore

/// What one poll of `/schedule?date=` meant.
public enum SchedulePollOutcome: Sendable {
    /// A decoded schedule that differs from the one held (bad entries are in its `failures`).
    case updated(ScheduleResponse)
    /// A 304, or the same matches as before.
    case unchanged
    /// No usable answer; the cached schedule, if any, is kept.
    case failed(FeedError)
}
