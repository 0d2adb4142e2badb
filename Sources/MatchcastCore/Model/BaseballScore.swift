/// Score of a baseball game: runs, the inning and its half, outs and runners on base.
public struct BaseballScore: Sendable, Hashable, Codable {
    /// Which half of the inning is being played.
    public enum Half: String, Sendable, Hashable, Codable {
        case top
        case bottom
    }

    public var home: Int
    public var away: Int
    public var inning: Int
    public var half: Half
    public var outs: Int
    /// Runners on first, second and third.
    public var bases: [Bool]

    public init(home: Int, away: Int, inning: Int, half: Half, outs: Int, bases: [Bool]) {
        self.home = home
        self.away = away
        self.inning = inning
        self.half = half
        self.outs = outs
        self.bases = bases
    }

    private enum CodingKeys: String, CodingKey { case home, away, inning, half, outs, bases }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        home = try c.decodeCount(forKey: .home)
        away = try c.decodeCount(forKey: .away)
        inning = try c.decodeCount(forKey: .inning, in: 1...99)
        half = try c.decode(Half.self, forKey: .half)
        outs = try c.decodeCount(forKey: .outs, in: 0...3)
        bases = try c.decodeIfPresent([Bool].self, forKey: .bases) ?? [false, false, false]
        guard bases.count == 3 else {
            throw DecodingError.dataCorruptedError(
                forKey: .bases, in: c, debugDescription: "expected 3 booleans (first, second, third)")
        }
    }
}
