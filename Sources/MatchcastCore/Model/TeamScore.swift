/// Score of football, basketball, hockey and American football: two totals, a period and a clock.
public struct TeamScore: Sendable, Hashable, Codable {
    public var home: Int
    public var away: Int
    /// Feed's own period label ("2H", "Q3", "OT").
    public var period: String?
    /// Feed's own clock label ("67'", "04:12").
    public var clock: String?

    public init(home: Int, away: Int, period: String? = nil, clock: String? = nil) {
        self.home = home
        self.away = away
        self.period = period
        self.clock = clock
    }

    private enum CodingKeys: String, CodingKey { case home, away, period, clock }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        home = try c.decodeCount(forKey: .home)
        away = try c.decodeCount(forKey: .away)
        period = try c.decodeIfPresent(String.self, forKey: .period)
        clock = try c.decodeIfPresent(String.self, forKey: .clock)
    }
}
