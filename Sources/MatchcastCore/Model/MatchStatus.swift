/// Where a match stands (docs/formats.md, "Feed (native v1)"). `completed` and `abandoned` are final.
public enum MatchStatus: String, Sendable, Hashable, Codable, CaseIterable {
    case scheduled
    case live
    case `break`
    case completed
    case abandoned
    case postponed

    /// No further change is expected: the activity ends.
    public var isFinal: Bool { self == .completed || self == .abandoned }

    /// In play or between periods: an activity should be running.
    public var isInProgress: Bool { self == .live || self == .break }
}
