import Foundation

/// One observation of a match as a feed reports it (docs/formats.md, "Feed (native v1)").
public struct MatchSnapshot: Sendable, Hashable, Codable {
    public var id: String
    public var sport: Sport
    public var status: MatchStatus
    public var startsAt: Date?
    public var updatedAt: Date?
    /// Only grows; a snapshot with a lower `seq` than one already seen is stale.
    public var seq: Int?
    public var competition: String?
    public var venue: String?
    public var home: Team
    public var away: Team
    public var score: Score
    /// Recent key events, newest last.
    public var events: [MatchEvent]

    public init(
        id: String, sport: Sport, status: MatchStatus, startsAt: Date? = nil, updatedAt: Date? = nil,
        seq: Int? = nil, competition: String? = nil, venue: String? = nil, home: Team, away: Team,
        score: Score, events: [MatchEvent] = []
    ) {
        self.id = id
        self.sport = sport
        self.status = status
        self.startsAt = startsAt
        self.updatedAt = updatedAt
        self.seq = seq
        self.competition = competition
        self.venue = venue
        self.home = home
        self.away = away
        self.score = score
        self.events = events
    }

    enum CodingKeys: String, CodingKey {
        case id, sport, status, startsAt, updatedAt, seq, competition, venue, home, away, score, events
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        id = try c.decodeNonEmpty(String.self, forKey: .id)
        guard id.utf8.count <= 128 else {
            throw DecodingError.dataCorruptedError(forKey: .id, in: c, debugDescription: "longer than 128 bytes")
        }
        sport = try c.decode(Sport.self, forKey: .sport)
        status = try c.decode(MatchStatus.self, forKey: .status)
        startsAt = try c.decodeIfPresent(Date.self, forKey: .startsAt)
        updatedAt = try c.decodeIfPresent(Date.self, forKey: .updatedAt)
        seq = try c.decodeIfPresent(Int.self, forKey: .seq)
        competition = try c.decodeIfPresent(String.self, forKey: .competition)
        venue = try c.decodeIfPresent(String.self, forKey: .venue)
        home = try c.decode(Team.self, forKey: .home)
        away = try c.decode(Team.self, forKey: .away)
        score = try Score.decode(sport, from: c)
        events = try c.decodeIfPresent([MatchEvent].self, forKey: .events) ?? []
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(id, forKey: .id)
        try c.encode(sport, forKey: .sport)
        try c.encode(status, forKey: .status)
        try c.encodeIfPresent(startsAt, forKey: .startsAt)
        try c.encodeIfPresent(updatedAt, forKey: .updatedAt)
        try c.encodeIfPresent(seq, forKey: .seq)
        try c.encodeIfPresent(competition, forKey: .competition)
        try c.encodeIfPresent(venue, forKey: .venue)
        try c.encode(home, forKey: .home)
        try c.encode(away, forKey: .away)
        try score.encode(to: &c)
        if !events.isEmpty { try c.encode(events, forKey: .events) }
    }

    /// The competitor on a side.
    public func team(_ side: Side) -> Team { side == .home ? home : away }

    /// The side whose team has this id, if any.
    public func side(ofTeam id: String) -> Side? {
        id == home.id ? .home : id == away.id ? .away : nil
    }
}
