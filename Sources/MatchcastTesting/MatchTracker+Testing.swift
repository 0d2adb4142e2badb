import Foundation
import MatchcastCore

extension MatchTracker {
    /// `ingest` at one fixed moment with the default ceiling of priority-10 pushes: for tests about what an update
    /// holds, not about its priority (`HighPriorityLedgerTests` are).
    public mutating func ingest(_ snapshot: MatchSnapshot, pollInterval: Duration) throws(InputError) -> MatchUpdate? {
        try ingest(
            snapshot, pollInterval: pollInterval, at: Date(timeIntervalSince1970: 1_700_000_000),
            highPriorityPerHour: ActivityPolicy.defaultHighPriorityPerHour)
    }
}
