/// One of the two competitors of a match, as the feed names them.
public enum Side: String, Sendable, Hashable, Codable, CaseIterable {
    case home
    case away

    /// The other side.
    public var opponent: Side { self == .home ? .away : .home }
}
