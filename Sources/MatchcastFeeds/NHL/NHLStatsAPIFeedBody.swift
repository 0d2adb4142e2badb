import Foundation

/// The parts of the legacy NHL Stats API live feed (`statsapi.web.nhl.com/api/v1/game/{gamePk}/feed/live`)
/// that `NHLStatsAPIFeed` reads. Everything the API may leave out is optional; unknown keys are ignored.
struct NHLStatsAPIFeedBody: Decodable {
    struct MetaData: Decodable {
        /// Seconds the server asks clients to wait before the next poll.
        var wait: Int?
    }

    struct GameData: Decodable {
        struct Game: Decodable {
            var pk: Int?
        }

        struct Status: Decodable {
            /// `Preview`, `Live` or `Final`.
            var abstractGameState: String
            /// `1` scheduled, `2` pre-game, `3` in progress, `4` critical, `5`...`7` over, `8` time TBD, `9` postponed.
            var codedGameState: String?
            /// `Scheduled`, `In Progress`, `In Progress - Critical`, `Final`, `Postponed`...
            var detailedState: String?
        }

        struct Teams: Decodable {
            var home: TeamInfo
            var away: TeamInfo
        }

        struct TeamInfo: Decodable {
            var id: Int
            var name: String?
            var abbreviation: String?
            var triCode: String?
        }

        struct DateTime: Decodable {
            var dateTime: Date?
        }

        struct Venue: Decodable {
            var name: String?
        }

        var game: Game?
        var status: Status
        var teams: Teams
        var datetime: DateTime?
        var venue: Venue?
    }

    struct LiveData: Decodable {
        var linescore: Linescore?
        var plays: Plays?
    }

    struct Linescore: Decodable {
        struct Teams: Decodable {
            var home: Goals?
            var away: Goals?
        }

        struct Goals: Decodable {
            var goals: Int?
        }

        struct Intermission: Decodable {
            var inIntermission: Bool?
        }

        /// 0 before the game; 4 is overtime, and in the regular season 5 the shootout.
        var currentPeriod: Int?
        /// `1st`, `2nd`, `3rd`, `OT`, `2OT`, `SO`.
        var currentPeriodOrdinal: String?
        /// `12:34`, `END` or `Final`.
        var currentPeriodTimeRemaining: String?
        var hasShootout: Bool?
        var teams: Teams?
        var intermissionInfo: Intermission?
    }

    struct Plays: Decodable {
        var allPlays: [Play]?
        /// Indexes into `allPlays`.
        var scoringPlays: [Int]?
    }

    struct Play: Decodable {
        struct Result: Decodable {
            var eventTypeId: String?
            var description: String?
        }

        struct About: Decodable {
            struct Goals: Decodable {
                var home: Int?
                var away: Int?
            }

            var eventId: Int?
            var eventIdx: Int?
            var period: Int?
            var periodType: String?
            /// Elapsed time in the period, `10:52`.
            var periodTime: String?
            var dateTime: Date?
            /// The score after this play.
            var goals: Goals?
        }

        struct Team: Decodable {
            var id: Int?
            var triCode: String?
        }

        var result: Result?
        var about: About?
        var team: Team?
    }

    var gamePk: Int?
    var metaData: MetaData?
    var gameData: GameData
    var liveData: LiveData?
}
