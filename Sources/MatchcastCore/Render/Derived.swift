/// The machine-readable score behind a content-state (docs/formats.md, "Content-state": `derived`).
public enum Derived: Sendable, Hashable, Encodable {
    case cricket(CricketDerived)
    case tennis(TennisDerived)
    case totals(TotalsDerived)

    public func encode(to encoder: any Encoder) throws {
        switch self {
        case .cricket(let value): try value.encode(to: encoder)
        case .tennis(let value): try value.encode(to: encoder)
        case .totals(let value): try value.encode(to: encoder)
        }
    }
}

/// Tennis `derived`: sets, games, points, tiebreak, server, winner.
public struct TennisDerived: Sendable, Hashable, Encodable {
    public var sets: [[Int]]
    public var games: [Int]
    public var points: [String]
    public var tiebreak: Bool
    public var server: Side
    public var winner: Side?

    public init(_ state: TennisState) {
        sets = state.sets
        games = state.games
        points = state.points
        tiebreak = state.tiebreak
        server = state.server
        winner = state.winner
    }

    private enum CodingKeys: String, CodingKey { case sets, games, points, tiebreak, server, winner }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(sets, forKey: .sets)
        try c.encode(games, forKey: .games)
        try c.encode(points, forKey: .points)
        try c.encode(tiebreak, forKey: .tiebreak)
        try c.encode(server, forKey: .server)
        try c.encode(winner, forKey: .winner)  // explicit null while undecided
    }
}

/// Cricket `derived`: innings with overs and run rate, target, equation, result.
public struct CricketDerived: Sendable, Hashable, Encodable {
    /// One innings as derived.
    public struct Innings: Sendable, Hashable, Encodable {
        public var team: String
        public var runs: Int
        public var wickets: Int
        public var overs: String
        public var runRate: String

        public init(team: String, runs: Int, wickets: Int, overs: String, runRate: String) {
            self.team = team
            self.runs = runs
            self.wickets = wickets
            self.overs = overs
            self.runRate = runRate
        }
    }

    /// Runs still needed and legal balls left in a limited-overs chase.
    public struct Need: Sendable, Hashable, Encodable {
        public var runs: Int
        public var balls: Int

        public init(runs: Int, balls: Int) {
            self.runs = runs
            self.balls = balls
        }
    }

    public var innings: [Innings]
    public var target: Int?
    public var need: Need?
    public var result: String?

    public init(innings: [Innings], target: Int?, need: Need?, result: String?) {
        self.innings = innings
        self.target = target
        self.need = need
        self.result = result
    }

    private enum CodingKeys: String, CodingKey { case innings, target, need, result }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(innings, forKey: .innings)
        try c.encode(target, forKey: .target)
        try c.encode(need, forKey: .need)
        try c.encode(result, forKey: .result)
    }
}

/// Other sports' `derived`: totals, period and clock (baseball adds inning, half, outs, bases).
public struct TotalsDerived: Sendable, Hashable, Encodable {
    public var home: Int
    public var away: Int
    public var period: String?
    public var clock: String?
    public var inning: Int?
    public var half: String?
    public var outs: Int?
    public var bases: [Bool]?

    public init(home: Int, away: Int, period: String? = nil, clock: String? = nil) {
        self.home = home
        self.away = away
        self.period = period
        self.clock = clock
    }

    private enum CodingKeys: String, CodingKey { case home, away, period, clock, inning, half, outs, bases }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(home, forKey: .home)
        try c.encode(away, forKey: .away)
        try c.encode(period, forKey: .period)
        try c.encode(clock, forKey: .clock)
        try c.encodeIfPresent(inning, forKey: .inning)
        try c.encodeIfPresent(half, forKey: .half)
        try c.encodeIfPresent(outs, forKey: .outs)
        try c.encodeIfPresent(bases, forKey: .bases)
    }
}
