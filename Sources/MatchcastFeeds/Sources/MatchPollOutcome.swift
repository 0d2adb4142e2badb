import MatchcastCore

/// What one poll of `/matches/{id}` meant.
public enum MatchPollOutcome: Sendable, Hashable {
    /// A snapshot that differs from the one held before.
    case updated(MatchSnapshot)
    /// A 304, or a 200 carrying exactly the snapshot already held.
    case unchanged
    /// A snapshot whose `seq` is lower than one already seen: ignored, not an error.
    case stale(seq: Int)
    /// No usable answer; the cached snapshot, if any, is kept.
    case failed(FeedError)
}
