import Foundation

extension ActivityLifecycle {
    /// What a fan-out moves the same way for every activity of its match: what it last sent, when, with which stale
    /// date, and what it holds back. Exactly as the lifecycle holds it (`FanOutState` is its stored, rounded form):
    /// the in-memory store keeps it once per match for the activities a fan-out moved, and gives it back to each.
    /// With `standing`, it is the whole lifecycle but its ids.
    public struct SentState: Sendable, Equatable {
        fileprivate var lastTimestamp: Int
        fileprivate var sent: ContentBox?
        fileprivate var sentAt: Date?
        fileprivate var sentStaleDate: Int?
        fileprivate var held: ContentBox?
        fileprivate var heldStaleness: Duration?
    }

    public var sentState: SentState {
        get {
            SentState(
                lastTimestamp: lastTimestamp, sent: sentBox, sentAt: sentAt, sentStaleDate: sentStaleDate, held: heldBox,
                heldStaleness: heldStaleness)
        }
        set {
            lastTimestamp = newValue.lastTimestamp
            // A box already held is left alone: no retain and release of a shared object per activity.
            if sentBox !== newValue.sent { sentBox = newValue.sent }
            sentAt = newValue.sentAt
            sentStaleDate = newValue.sentStaleDate
            if heldBox !== newValue.held { heldBox = newValue.held }
            heldStaleness = newValue.heldStaleness
        }
    }
}
