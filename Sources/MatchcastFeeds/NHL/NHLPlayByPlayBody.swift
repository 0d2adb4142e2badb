import Foundation

/// The parts of the NHL api-web play-by-play (`GET /v1/gamecenter/{id}/play-by-play`) that
/// `NHLWebFeed` reads: the game header at the top level, then `plays[]` and `rosterSpots[]`.
/// Everything the API may leave out is optional; unknown keys are ignored.
struct NHLPlayByPlayBody: Decodable {
    /// One event of the game: faceoff, shot, hit, stoppage, goal, period start and end...
    struct Play: Decodable {
        /// The `details` of a goal; other play types carry other keys, all ignored.
        struct Details: Decodable {
            var scoringPlayerId: Int?
            /// The scorer's goals this season (or these playoffs) after this one.
            var scoringPlayerTotal: Int?
            var eventOwnerTeamId: Int?
            var homeScore: Int?
            var awayScore: Int?
        }

        var eventId: Int?
        /// Orders the plays; grows through the game.
        var sortOrder: Int?
        /// `goal`, `shot-on-goal`, `faceoff`, `period-end`...
        var typeDescKey: String?
        var periodDescriptor: NHLWebGame.PeriodDescriptor?
        /// Elapsed time in the period, `03:44`.
        var timeInPeriod: String?
        var details: Details?
    }

    /// A player dressed for the game.
    struct RosterSpot: Decodable {
        var playerId: Int?
        var teamId: Int?
        var firstName: NHLWebGame.Text?
        var lastName: NHLWebGame.Text?
    }

    var game: NHLWebGame
    var plays: [Play]?
    var rosterSpots: [RosterSpot]?

    private enum CodingKeys: String, CodingKey { case plays, rosterSpots }

    init(from decoder: any Decoder) throws {
        game = try NHLWebGame(from: decoder)
        let c = try decoder.container(keyedBy: CodingKeys.self)
        plays = try c.decodeIfPresent([Play].self, forKey: .plays)
        rosterSpots = try c.decodeIfPresent([RosterSpot].self, forKey: .rosterSpots)
    }
}
