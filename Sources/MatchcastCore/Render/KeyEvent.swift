/// A moment worth an alert: sent at priority 10 with `alert` (title and body).
public struct KeyEvent: Sendable, Hashable, Codable {
    /// What happened; the raw value is stable and used in metrics and summaries.
    public enum Kind: String, Sendable, Hashable, Codable, CaseIterable {
        case matchStart
        case matchEnd
        case wicket
        case six
        case fifty
        case hundred
        case inningsEnd
        case goal
        case run
        case score
        case breakOfServe
        case setWon
        case matchWon
    }

    public var kind: Kind
    /// Alert title: usually the score line ("MI 87/6 (14.2)").
    public var title: String
    /// Alert body: what happened ("Dhoni c Rohit b Bumrah 12 (9)").
    public var body: String

    public init(kind: Kind, title: String, body: String) {
        self.kind = kind
        self.title = title
        self.body = body
    }
}
