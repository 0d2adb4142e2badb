/// The ActivityKit push `event`.
public enum ActivityEvent: String, Sendable, Hashable, Codable, CaseIterable {
    case start
    case update
    case end
}
