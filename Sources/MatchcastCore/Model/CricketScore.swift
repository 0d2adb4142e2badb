/// Raw cricket score (docs/formats.md, "Feed (native v1)"): innings totals, the batters in and the bowler on.
///
/// Beyond the contract's fields the feed may state `method` ("D/L") and `winner`
/// (a team id, for results the totals cannot decide: boundary count, bowl-out).
public struct CricketScore: Sendable, Hashable, Codable {
    /// The form of the game; it decides the overs limit and how results read.
    public enum Format: String, Sendable, Hashable, Codable {
        case t20
        case odi
        case test
    }

    /// One innings: totals so far and, for a chase, the target.
    public struct Innings: Sendable, Hashable, Codable {
        /// Id of the batting team (matches `home.id` or `away.id`).
        public var team: String
        public var runs: Int
        public var wickets: Int
        /// Legal deliveries bowled: 86 balls is "14.2" overs.
        public var balls: Int
        public var target: Int?
        /// A one-over eliminator after a tie.
        public var superOver: Bool
        /// Overs limit of this innings when it differs from the match's (rain, super over).
        public var oversLimit: Int?
        public var declared: Bool

        public init(
            team: String, runs: Int, wickets: Int, balls: Int, target: Int? = nil,
            superOver: Bool = false, oversLimit: Int? = nil, declared: Bool = false
        ) {
            self.team = team
            self.runs = runs
            self.wickets = wickets
            self.balls = balls
            self.target = target
            self.superOver = superOver
            self.oversLimit = oversLimit
            self.declared = declared
        }

        private enum CodingKeys: String, CodingKey {
            case team, runs, wickets, balls, target, superOver, oversLimit, declared
        }

        public init(from decoder: any Decoder) throws {
            let c = try decoder.container(keyedBy: CodingKeys.self)
            team = try c.decodeNonEmpty(String.self, forKey: .team)
            runs = try c.decodeCount(forKey: .runs)
            wickets = try c.decodeCount(forKey: .wickets, in: 0...10)
            balls = try c.decodeCount(forKey: .balls)
            target = try c.decodeIfPresent(Int.self, forKey: .target)
            superOver = try c.decodeIfPresent(Bool.self, forKey: .superOver) ?? false
            oversLimit = try c.decodeIfPresent(Int.self, forKey: .oversLimit)
            declared = try c.decodeIfPresent(Bool.self, forKey: .declared) ?? false
        }

        public func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(team, forKey: .team)
            try c.encode(runs, forKey: .runs)
            try c.encode(wickets, forKey: .wickets)
            try c.encode(balls, forKey: .balls)
            try c.encodeIfPresent(target, forKey: .target)
            if superOver { try c.encode(true, forKey: .superOver) }
            try c.encodeIfPresent(oversLimit, forKey: .oversLimit)
            if declared { try c.encode(true, forKey: .declared) }
        }
    }

    /// A batter at the crease.
    public struct Batter: Sendable, Hashable, Codable {
        public var name: String
        public var runs: Int
        public var balls: Int
        public var onStrike: Bool

        public init(name: String, runs: Int, balls: Int, onStrike: Bool = false) {
            self.name = name
            self.runs = runs
            self.balls = balls
            self.onStrike = onStrike
        }

        private enum CodingKeys: String, CodingKey { case name, runs, balls, onStrike }

        public init(from decoder: any Decoder) throws {
            let c = try decoder.container(keyedBy: CodingKeys.self)
            name = try c.decodeNonEmpty(String.self, forKey: .name)
            runs = try c.decodeCount(forKey: .runs)
            balls = try c.decodeCount(forKey: .balls)
            onStrike = try c.decodeIfPresent(Bool.self, forKey: .onStrike) ?? false
        }
    }

    /// The bowler of the current over, with match figures.
    public struct Bowler: Sendable, Hashable, Codable {
        public var name: String
        public var balls: Int
        public var runs: Int
        public var wickets: Int

        public init(name: String, balls: Int, runs: Int, wickets: Int) {
            self.name = name
            self.balls = balls
            self.runs = runs
            self.wickets = wickets
        }

        private enum CodingKeys: String, CodingKey { case name, balls, runs, wickets }

        public init(from decoder: any Decoder) throws {
            let c = try decoder.container(keyedBy: CodingKeys.self)
            name = try c.decodeNonEmpty(String.self, forKey: .name)
            balls = try c.decodeCount(forKey: .balls)
            runs = try c.decodeCount(forKey: .runs)
            wickets = try c.decodeCount(forKey: .wickets, in: 0...10)
        }
    }

    public var format: Format
    public var oversLimit: Int?
    public var innings: [Innings]
    public var batters: [Batter]
    public var bowler: Bowler?
    /// How a result was reached when the feed states it ("D/L").
    public var method: String?
    /// Winner's team id when the totals alone cannot say (boundary count after a tied super over).
    public var winner: String?

    public init(
        format: Format, oversLimit: Int? = nil, innings: [Innings], batters: [Batter] = [],
        bowler: Bowler? = nil, method: String? = nil, winner: String? = nil
    ) {
        self.format = format
        self.oversLimit = oversLimit
        self.innings = innings
        self.batters = batters
        self.bowler = bowler
        self.method = method
        self.winner = winner
    }

    private enum CodingKeys: String, CodingKey { case format, oversLimit, innings, batters, bowler, method, winner }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        format = try c.decode(Format.self, forKey: .format)
        oversLimit = try c.decodeIfPresent(Int.self, forKey: .oversLimit)
        if let limit = oversLimit, !(1...100).contains(limit) {
            throw DecodingError.dataCorruptedError(forKey: .oversLimit, in: c, debugDescription: "must be 1...100")
        }
        innings = try c.decodeIfPresent([Innings].self, forKey: .innings) ?? []
        batters = try c.decodeIfPresent([Batter].self, forKey: .batters) ?? []
        bowler = try c.decodeIfPresent(Bowler.self, forKey: .bowler)
        method = try c.decodeIfPresent(String.self, forKey: .method)
        winner = try c.decodeIfPresent(String.self, forKey: .winner)
    }

    /// The overs limit that applies: the feed's, else the format's (none for Tests).
    public var effectiveOversLimit: Int? {
        oversLimit ?? (format == .t20 ? 20 : format == .odi ? 50 : nil)
    }
}
