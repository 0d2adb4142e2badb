/// The sport-specific part of a snapshot, shaped by `sport`.
public enum Score: Sendable, Hashable {
    case cricket(CricketScore)
    case tennis(TennisScore)
    case teamTotals(TeamScore)
    case baseball(BaseballScore)

    /// The score of a match that has not begun.
    public static func empty(for sport: Sport) -> Score {
        switch sport {
        case .cricket: .cricket(CricketScore(format: .t20, innings: []))
        case .tennis: .tennis(TennisScore(rules: TennisRules(bestOf: 3, firstServer: .home, finalSetTiebreak: 7), points: ""))
        case .baseball: .baseball(BaseballScore(home: 0, away: 0, inning: 1, half: .top, outs: 0, bases: [false, false, false]))
        case .football, .basketball, .hockey, .americanFootball: .teamTotals(TeamScore(home: 0, away: 0))
        }
    }

    func encode(to container: inout KeyedEncodingContainer<MatchSnapshot.CodingKeys>) throws {
        switch self {
        case .cricket(let s): try container.encode(s, forKey: .score)
        case .tennis(let s): try container.encode(s, forKey: .score)
        case .teamTotals(let s): try container.encode(s, forKey: .score)
        case .baseball(let s): try container.encode(s, forKey: .score)
        }
    }

    static func decode(_ sport: Sport, from c: KeyedDecodingContainer<MatchSnapshot.CodingKeys>) throws -> Score {
        guard c.contains(.score), try !c.decodeNil(forKey: .score) else { return .empty(for: sport) }
        switch sport {
        case .cricket: return .cricket(try c.decode(CricketScore.self, forKey: .score))
        case .tennis: return .tennis(try c.decode(TennisScore.self, forKey: .score))
        case .baseball: return .baseball(try c.decode(BaseballScore.self, forKey: .score))
        case .football, .basketball, .hockey, .americanFootball:
            return .teamTotals(try c.decode(TeamScore.self, forKey: .score))
        }
    }
}
