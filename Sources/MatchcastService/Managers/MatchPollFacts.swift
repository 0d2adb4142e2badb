import Foundation
import MatchcastCore
import Synchronization

/// What the poll path asks about each match after every poll, answered under a lock rather than on the lifecycle
/// manager's actor: when the match's feed last answered (changed or not), and whether the match needs a source of its
/// own (not once it is final or postponed). The lifecycle manager writes both as it ingests snapshots; a poll whose
/// answer is unchanged records its answer and reads whether to go on without waiting for the manager.
public final class MatchPollFacts: Sendable {
    private struct Facts: Sendable {
        var lastAnswer: [String: Date] = [:]
        /// Final or postponed, as last ingested.
        var sourceless: Set<String> = []
    }

    private let facts = Mutex(Facts())

    public init() {}

    /// The feed answered for the match at `moment`.
    public func answered(_ matchId: String, at moment: Date) {
        facts.withLock { $0.lastAnswer[matchId] = moment }
    }

    /// Whether the feed answered for the match less than `window` before `moment`.
    public func answeredRecently(_ matchId: String, at moment: Date, within window: Duration) -> Bool {
        guard let answer = facts.withLock({ $0.lastAnswer[matchId] }) else { return false }
        return moment.timeIntervalSince(answer) < window.seconds
    }

    /// The match's status as last ingested (nil: not known).
    public func record(_ matchId: String, status: MatchStatus?) {
        let sourceless = status.map { $0.isFinal || $0 == .postponed } ?? false
        facts.withLock {
            if sourceless { $0.sourceless.insert(matchId) } else { $0.sourceless.remove(matchId) }
        }
    }

    /// Final or postponed: no source of its own (the live list shows it again if it goes live).
    public func needsNoSource(_ matchId: String) -> Bool {
        facts.withLock { $0.sourceless.contains(matchId) }
    }

    /// `matchIds` without those that need no source, under one lock.
    public func wantingSources(_ matchIds: [String]) -> [String] {
        facts.withLock { facts in matchIds.filter { !facts.sourceless.contains($0) } }
    }

    /// Everything known of the match is dropped (the lifecycle manager forgot it).
    public func forget(_ matchId: String) {
        facts.withLock {
            $0.lastAnswer[matchId] = nil
            $0.sourceless.remove(matchId)
        }
    }
}
