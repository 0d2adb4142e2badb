import Synchronization

/// The matches each feed's live list serves whole, when the broker lets a list stand in for its matches' own polls
/// (`Broker(listServesMatches:)`, feeds whose list carries whole matches): one list request then serves every match it
/// shows. A match shown in its feed's last good answer is not polled on its own; a failed list, or this replica losing
/// the list's lease, hands the matches back to their own polls at their next look.
final class ListCoverage: Sendable {
    private struct Listed {
        var ids: Set<String>
        /// The list's own interval: how long a match it serves waits before it looks again.
        var interval: Duration
    }

    /// Whether lists may serve matches at all.
    let isEnabled: Bool
    private let lists = Mutex<[Int: Listed]>([:])

    init(isEnabled: Bool) {
        self.isEnabled = isEnabled
    }

    /// The feed `member`'s list answered, showing `ids`; it is polled again after `interval`.
    func listed(_ ids: Set<String>, by member: Int, interval: Duration) {
        guard isEnabled else { return }
        lists.withLock { $0[member] = Listed(ids: ids, interval: interval) }
    }

    /// The list answered unchanged: it still shows what it showed, and is polled again after `interval`.
    func unchanged(_ member: Int, interval: Duration) {
        guard isEnabled else { return }
        lists.withLock { $0[member]?.interval = interval }
    }

    /// The matches the feed `member`'s list serves now.
    func ids(of member: Int) -> Set<String> {
        guard isEnabled else { return [] }
        return lists.withLock { $0[member]?.ids ?? [] }
    }

    /// The list of `member` failed or is polled elsewhere: its matches go back to their own polls.
    func lapse(_ member: Int) {
        guard isEnabled else { return }
        _ = lists.withLock { $0.removeValue(forKey: member) }
    }

    /// How long the match served by `member` waits before it looks again, when that feed's list serves it; nil when
    /// the match must be polled on its own.
    func interval(serving matchId: String, from member: Int?) -> Duration? {
        guard isEnabled, let member else { return nil }
        return lists.withLock { lists in
            guard let listed = lists[member], listed.ids.contains(matchId) else { return nil }
            return listed.interval
        }
    }
}
