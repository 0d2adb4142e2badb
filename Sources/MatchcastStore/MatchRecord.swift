import Foundation
import MatchcastCore

/// The latest known state of a match, so sources and activities resume after a restart.
public struct MatchRecord: Sendable, Hashable, Codable {
    public var matchId: String
    public var snapshot: MatchSnapshot
    public var updatedAt: Date
    /// Unix seconds of the priority-10 pushes its activities were sent in the last hour (`HighPriorityLedger`), so
    /// that the hourly ceiling holds across a restart or a takeover.
    public var highPrioritySends: [Int]

    public init(matchId: String, snapshot: MatchSnapshot, updatedAt: Date, highPrioritySends: [Int] = []) {
        self.matchId = matchId
        self.snapshot = snapshot
        self.updatedAt = updatedAt
        self.highPrioritySends = highPrioritySends
    }

    /// A record whose id is the snapshot's.
    public init(snapshot: MatchSnapshot, updatedAt: Date, highPrioritySends: [Int] = []) {
        self.init(matchId: snapshot.id, snapshot: snapshot, updatedAt: updatedAt, highPrioritySends: highPrioritySends)
    }

    /// The ledger its sends make.
    public var ledger: HighPriorityLedger { HighPriorityLedger(sends: highPrioritySends) }

    /// Throws when the record contradicts its own snapshot.
    func validate() throws(StoreError) {
        guard !matchId.isEmpty else { throw .invalid("match record with an empty id") }
        guard highPrioritySends.count <= Self.maximumHighPrioritySends else {
            throw .invalid("match record '\(matchId)' with \(highPrioritySends.count) priority-10 sends in an hour")
        }
        guard snapshot.id == matchId else {
            throw .invalid("match record '\(matchId)' holds a snapshot of match '\(snapshot.id)'")
        }
    }

    /// More than any ceiling can let through in an hour (one a second).
    static let maximumHighPrioritySends = HighPriorityLedger.window

}
