import Foundation

extension ActivityLifecycle {
    /// The lifecycle as a store keeps it in columns rather than as one JSON document: every field, with the
    /// contents as the boxes the lifecycle shares with the other activities of its match, so a store writes each
    /// distinct content once (a content-state row) and per activity only numbers and references.
    ///
    /// Dates are whole seconds, as in the lifecycle's JSON form.
    public struct Stored: Sendable, Hashable {
        public var phase: Phase
        /// As kept: a store writes its digits out (`CompactToken.withUTF8`) rather than a string per activity.
        public var updateToken: CompactToken?
        public var lastTimestamp: Int
        public var sent: ContentBox?
        /// Unix seconds.
        public var sentAt: Int?
        public var sentStaleDate: Int?
        /// Unix seconds.
        public var startedAt: Int?
        public var held: ContentBox?
        /// Nanoseconds.
        public var heldStaleness: Int64?
        public var endHeld: Bool
        public var final: ContentBox?
        public var channelId: String?

        public init(
            phase: Phase, updateToken: CompactToken?, lastTimestamp: Int, sent: ContentBox?, sentAt: Int?, sentStaleDate: Int?,
            startedAt: Int?, held: ContentBox?, heldStaleness: Int64?, endHeld: Bool, final: ContentBox?, channelId: String?
        ) {
            self.phase = phase
            self.updateToken = updateToken
            self.lastTimestamp = lastTimestamp
            self.sent = sent
            self.sentAt = sentAt
            self.sentStaleDate = sentStaleDate
            self.startedAt = startedAt
            self.held = held
            self.heldStaleness = heldStaleness
            self.endHeld = endHeld
            self.final = final
            self.channelId = channelId
        }
    }

    /// What a store writes.
    public var stored: Stored {
        Stored(
            phase: phase, updateToken: storedUpdateToken, lastTimestamp: lastTimestamp, sent: sentBox,
            sentAt: sentAt.map(Self.wholeSeconds), sentStaleDate: sentStaleDate, startedAt: startedAt.map(Self.wholeSeconds),
            held: heldBox, heldStaleness: heldStaleness.map(Self.nanoseconds), endHeld: endHeld, final: finalBox,
            channelId: channelId)
    }

    /// Whether the fields a fan-out moves every activity of a match along (`ActivityLifecycle.standing`'s sent and held
    /// part) read as given, in their stored forms: what `stored` would say, without building it. A fan-out asks this of
    /// each activity it moved, so it compares in place, contents by identity first.
    public func storesSentState(
        lastTimestamp: Int, sent: ContentBox?, sentAt: Int?, sentStaleDate: Int?, held: ContentBox?, heldStaleness: Int64?
    ) -> Bool {
        self.lastTimestamp == lastTimestamp && self.sentStaleDate == sentStaleDate
            && self.sentAt.map(Self.wholeSeconds) == sentAt && self.heldStaleness.map(Self.nanoseconds) == heldStaleness
            && sentBox == sent && heldBox == held
    }

    /// A lifecycle as a store read it back.
    public init(activityId: String, matchId: String, stored: Stored) {
        self.init(activityId: activityId, matchId: matchId)
        phase = stored.phase
        storedUpdateToken = stored.updateToken
        lastTimestamp = stored.lastTimestamp
        sentBox = stored.sent
        sentAt = stored.sentAt.map { Date(timeIntervalSince1970: TimeInterval($0)) }
        sentStaleDate = stored.sentStaleDate
        startedAt = stored.startedAt.map { Date(timeIntervalSince1970: TimeInterval($0)) }
        heldBox = stored.held
        heldStaleness = stored.heldStaleness.map { Duration.nanoseconds($0) }
        endHeld = stored.endHeld
        finalBox = stored.final
        channelId = stored.channelId
    }

    private static func wholeSeconds(_ date: Date) -> Int {
        Int(date.timeIntervalSince1970.rounded(.down))
    }

    private static func nanoseconds(_ duration: Duration) -> Int64 {
        let parts = duration.components
        return parts.seconds * 1_000_000_000 + parts.attoseconds / 1_000_000_000
    }
}
