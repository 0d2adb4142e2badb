import MatchcastCore

/// What a decoded `/live-matches` answer changed.
public struct LiveListUpdate: Sendable, Hashable {
    /// Every match now in the list, each at the newest `seq` seen. An entry that came back stale, or
    /// failed to decode, keeps its previous snapshot here, so a bad entry never makes a match vanish.
    /// Response order, with such kept entries after the rest.
    public var matches: [MatchSnapshot]
    /// Matches that are new or differ from the previous list.
    public var changed: [MatchSnapshot]
    /// Ids that were in the previous list and are in neither the matches nor the failures of this one.
    public var removed: [String]
    /// Entries ignored because their `seq` is lower than one already seen.
    public var stale: [StaleSnapshot]
    /// Entries that could not be decoded; the rest of the list is still used.
    public var failures: [MatchDecodeFailure]

    public init(
        matches: [MatchSnapshot], changed: [MatchSnapshot] = [], removed: [String] = [],
        stale: [StaleSnapshot] = [], failures: [MatchDecodeFailure] = []
    ) {
        self.matches = matches
        self.changed = changed
        self.removed = removed
        self.stale = stale
        self.failures = failures
    }
}

/// A snapshot ignored because the feed had already shown a newer one.
public struct StaleSnapshot: Sendable, Hashable {
    public var matchId: String
    /// The `seq` that came in.
    public var seq: Int
    /// The `seq` already held.
    public var heldSeq: Int

    public init(matchId: String, seq: Int, heldSeq: Int) {
        self.matchId = matchId
        self.seq = seq
        self.heldSeq = heldSeq
    }
}

/// What one poll of `/live-matches` meant.
public enum LiveListPollOutcome: Sendable, Hashable {
    /// A decoded list with something to report: a change, a removal, a stale or an undecodable entry.
    case updated(LiveListUpdate)
    /// A 304, or a list identical to the one held with nothing to report.
    case unchanged
    /// No usable answer; the cached list is kept.
    case failed(FeedError)
}
