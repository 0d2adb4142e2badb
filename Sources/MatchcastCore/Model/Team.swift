/// A competitor as the feed names it: a team or, in tennis, a player.
public struct Team: Sendable, Hashable, Codable {
    public var id: String
    public var name: String
    /// Short name for tight layouts ("MI"); the feed may omit it.
    public var short: String

    public init(id: String, name: String, short: String? = nil) {
        self.id = id
        self.name = name
        self.short = short ?? Team.defaultShort(for: name)
    }

    private enum CodingKeys: String, CodingKey { case id, name, short }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        let id = try c.decodeNonEmpty(String.self, forKey: .id)
        let name = try c.decodeNonEmpty(String.self, forKey: .name)
        self.init(id: id, name: name, short: try c.decodeIfPresent(String.self, forKey: .short))
    }

    /// The first three letters of the name, upper-cased, when the feed gives no short name.
    static func defaultShort(for name: String) -> String {
        String(name.filter { !$0.isWhitespace }.prefix(3)).uppercased()
    }
}
