/// Raw tennis score: the rules and the ordered winners of every point. Everything else is derived.
public struct TennisScore: Sendable, Hashable, Codable {
    public var rules: TennisRules
    /// One character a point: `H` home won it, `A` away won it.
    public var points: String

    public init(rules: TennisRules, points: String) {
        self.rules = rules
        self.points = points
    }

    private enum CodingKeys: String, CodingKey { case bestOf, firstServer, finalSetTiebreak, points }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        let bestOf = try c.decodeIfPresent(Int.self, forKey: .bestOf) ?? 3
        guard bestOf == 3 || bestOf == 5 else {
            throw DecodingError.dataCorruptedError(forKey: .bestOf, in: c, debugDescription: "must be 3 or 5")
        }
        let tiebreak = try c.decodeIfPresent(Int.self, forKey: .finalSetTiebreak) ?? 7
        guard [0, 7, 10].contains(tiebreak) else {
            throw DecodingError.dataCorruptedError(
                forKey: .finalSetTiebreak, in: c, debugDescription: "must be 7, 10 or 0")
        }
        let server = try c.decodeIfPresent(Side.self, forKey: .firstServer) ?? .home
        points = try c.decodeIfPresent(String.self, forKey: .points) ?? ""
        guard points.utf8.allSatisfy({ $0 == UInt8(ascii: "H") || $0 == UInt8(ascii: "A") }) else {
            throw DecodingError.dataCorruptedError(forKey: .points, in: c, debugDescription: "only H and A are allowed")
        }
        rules = TennisRules(bestOf: bestOf, firstServer: server, finalSetTiebreak: tiebreak)
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(rules.bestOf, forKey: .bestOf)
        try c.encode(rules.firstServer, forKey: .firstServer)
        try c.encode(rules.finalSetTiebreak, forKey: .finalSetTiebreak)
        try c.encode(points, forKey: .points)
    }
}
