import Foundation

extension ActivityLifecycle {
    /// The fields of a lifecycle. Changed only through `mutable`, which copies a box that another lifecycle shares
    /// first, so lifecycles keep value semantics (an `Array`'s kind of copy-on-write): that is what makes the class
    /// safe to send.
    final class Storage: @unchecked Sendable {
        let activityId: String
        let matchId: String
        var phase: Phase = .waiting
        var endHeld = false
        var updateToken: String?
        var lastTimestamp = 0
        var sentBox: ContentBox?
        var sentAt: Date?
        var sentStaleDate: Int?
        var startedAt: Date?
        var heldBox: ContentBox?
        var heldStaleness: Duration?
        var finalBox: ContentBox?
        var channelId: String?

        init(activityId: String, matchId: String) {
            self.activityId = activityId
            self.matchId = matchId
        }

        func copy() -> Storage {
            let copy = Storage(activityId: activityId, matchId: matchId)
            copy.phase = phase
            copy.endHeld = endHeld
            copy.updateToken = updateToken
            copy.lastTimestamp = lastTimestamp
            copy.sentBox = sentBox
            copy.sentAt = sentAt
            copy.sentStaleDate = sentStaleDate
            copy.startedAt = startedAt
            copy.heldBox = heldBox
            copy.heldStaleness = heldStaleness
            copy.finalBox = finalBox
            copy.channelId = channelId
            return copy
        }
    }

    /// The storage, this lifecycle's own from here on: copied first when another lifecycle shares it.
    var mutable: Storage {
        mutating get {
            if !isKnownUniquelyReferenced(&storage) { storage = storage.copy() }
            return storage
        }
    }
}

// MARK: Equal, hashed and coded as the fields

extension ActivityLifecycle {
    public static func == (lhs: ActivityLifecycle, rhs: ActivityLifecycle) -> Bool {
        let (left, right) = (lhs.storage, rhs.storage)
        if left === right { return true }
        return left.activityId == right.activityId && left.matchId == right.matchId && left.phase == right.phase
            && left.updateToken == right.updateToken && left.lastTimestamp == right.lastTimestamp
            && left.sentBox == right.sentBox && left.sentAt == right.sentAt && left.sentStaleDate == right.sentStaleDate
            && left.startedAt == right.startedAt && left.heldBox == right.heldBox
            && left.heldStaleness == right.heldStaleness && left.endHeld == right.endHeld
            && left.finalBox == right.finalBox && left.channelId == right.channelId
    }

    public func hash(into hasher: inout Hasher) {
        let fields = storage
        hasher.combine(fields.activityId)
        hasher.combine(fields.matchId)
        hasher.combine(fields.phase)
        hasher.combine(fields.updateToken)
        hasher.combine(fields.lastTimestamp)
        hasher.combine(fields.sentBox)
        hasher.combine(fields.sentAt)
        hasher.combine(fields.sentStaleDate)
        hasher.combine(fields.startedAt)
        hasher.combine(fields.heldBox)
        hasher.combine(fields.heldStaleness)
        hasher.combine(fields.endHeld)
        hasher.combine(fields.finalBox)
        hasher.combine(fields.channelId)
    }

    // Stored under the names the fields had before they were boxed (the contents), in the order they were declared.
    private enum CodingKeys: String, CodingKey {
        case activityId, matchId, phase, updateToken, lastTimestamp, sentAt, sentStaleDate, startedAt
        case heldStaleness, endHeld, channelId
        case sentBox = "sentContent"
        case heldBox = "held"
        case finalBox = "finalContent"
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        self.init(
            activityId: try container.decode(String.self, forKey: .activityId),
            matchId: try container.decode(String.self, forKey: .matchId))
        let fields = storage
        fields.phase = try container.decode(Phase.self, forKey: .phase)
        fields.updateToken = try container.decodeIfPresent(String.self, forKey: .updateToken)
        fields.lastTimestamp = try container.decode(Int.self, forKey: .lastTimestamp)
        fields.sentBox = try container.decodeIfPresent(ContentBox.self, forKey: .sentBox)
        fields.sentAt = try container.decodeIfPresent(Date.self, forKey: .sentAt)
        fields.sentStaleDate = try container.decodeIfPresent(Int.self, forKey: .sentStaleDate)
        fields.startedAt = try container.decodeIfPresent(Date.self, forKey: .startedAt)
        fields.heldBox = try container.decodeIfPresent(ContentBox.self, forKey: .heldBox)
        fields.heldStaleness = try container.decodeIfPresent(Duration.self, forKey: .heldStaleness)
        fields.endHeld = try container.decode(Bool.self, forKey: .endHeld)
        fields.finalBox = try container.decodeIfPresent(ContentBox.self, forKey: .finalBox)
        fields.channelId = try container.decodeIfPresent(String.self, forKey: .channelId)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        let fields = storage
        try container.encode(fields.activityId, forKey: .activityId)
        try container.encode(fields.matchId, forKey: .matchId)
        try container.encode(fields.phase, forKey: .phase)
        try container.encodeIfPresent(fields.updateToken, forKey: .updateToken)
        try container.encode(fields.lastTimestamp, forKey: .lastTimestamp)
        try container.encodeIfPresent(fields.sentBox, forKey: .sentBox)
        try container.encodeIfPresent(fields.sentAt, forKey: .sentAt)
        try container.encodeIfPresent(fields.sentStaleDate, forKey: .sentStaleDate)
        try container.encodeIfPresent(fields.startedAt, forKey: .startedAt)
        try container.encodeIfPresent(fields.heldBox, forKey: .heldBox)
        try container.encodeIfPresent(fields.heldStaleness, forKey: .heldStaleness)
        try container.encode(fields.endHeld, forKey: .endHeld)
        try container.encodeIfPresent(fields.finalBox, forKey: .finalBox)
        try container.encodeIfPresent(fields.channelId, forKey: .channelId)
    }
}
