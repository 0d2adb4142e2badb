import Foundation
import MatchcastCore

/// One simulated match, precomputed: every snapshot it will show and the simulated
/// second (since the feed started) from which it shows it.
///
/// Entries are in time order, `seq` grows by one per entry, the first is `scheduled`
/// and the last is final.
public struct FakeTimeline: Sendable, Hashable {
    /// A snapshot and the simulated second it becomes current.
    public struct Entry: Sendable, Hashable {
        /// Simulated seconds since the feed started.
        public var time: Double
        public var snapshot: MatchSnapshot

        public init(time: Double, snapshot: MatchSnapshot) {
            self.time = time
            self.snapshot = snapshot
        }
    }

    /// The match id, which is the scenario name.
    public let id: String
    public let entries: [Entry]

    init(id: String, entries: [Entry]) {
        precondition(!entries.isEmpty, "a timeline starts with its scheduled snapshot")
        self.id = id
        self.entries = entries
    }

    /// Simulated seconds from the feed's start to the final snapshot.
    public var duration: Double { entries[entries.count - 1].time }

    /// The entry current at `simulatedSeconds`: the last one that is not in the future
    /// (the first one before the timeline begins).
    public func entry(at simulatedSeconds: Double) -> Entry {
        // Binary search for the first entry later than the moment.
        var low = 0
        var high = entries.count
        while low < high {
            let middle = (low + high) / 2
            if entries[middle].time <= simulatedSeconds {
                low = middle + 1
            } else {
                high = middle
            }
        }
        return entries[max(low - 1, 0)]
    }

    /// The snapshot current at `simulatedSeconds`.
    public func snapshot(at simulatedSeconds: Double) -> MatchSnapshot {
        entry(at: simulatedSeconds).snapshot
    }

    /// When the match reached a final status, in simulated seconds.
    var finishedAt: Double? {
        entries.first { $0.snapshot.status.isFinal }?.time
    }
}
