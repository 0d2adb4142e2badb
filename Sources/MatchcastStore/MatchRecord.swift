import Foundation
import MatchcastCore

/// The latest known state of a match, so sources and activities resume after a restart.
public struct MatchRecord: Sendable, Hashable, Codable {
    public var matchId: String
    public var snapshot: MatchSnapshot
    public var updatedAt: Date

    public init(matchId: String, snapshot: MatchSnapshot, updatedAt: Date) {
        self.matchId = matchId
        self.snapshot = snapshot
        self.updatedAt = updatedAt
    }

    /// A record whose id is the snapshot's.
    public init(snapshot: MatchSnapshot, updatedAt: Date) {
        self.init(matchId: snapshot.id, snapshot: snapshot, updatedAt: updatedAt)
    }

    /// Throws when the record contradicts its own snapshot.
    func validate() throws(StoreError) {
        guard !matchId.isEmpty else { throw .invalid("match record with an empty id") }
        guard snapshot.id == matchId else {
            throw .invalid("match record '\(matchId)' holds a snapshot of match '\(snapshot.id)'")
        }
    }
}
