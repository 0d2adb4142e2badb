import Foundation

/// A key moment the feed reports ("wicket", "goal"); `id` is stable across polls.
public struct MatchEvent: Sendable, Hashable, Codable {
    public var id: String
    public var type: String
    public var at: Date?
    public var text: String

    public init(id: String, type: String, at: Date? = nil, text: String) {
        self.id = id
        self.type = type
        self.at = at
        self.text = text
    }
}
