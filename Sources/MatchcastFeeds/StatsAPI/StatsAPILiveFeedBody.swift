import Foundation

/// The game live feed (`/game/{gamePk}/feed/live`) as the MLB Stats API and the legacy NHL Stats API both write it:
/// `gamePk`, `metaData`, `gameData` (status, teams, start, venue) and `liveData`, whose linescore and plays are
/// each sport's own. Everything the APIs may leave out is optional; unknown keys are ignored.
struct StatsAPILiveFeedBody<Linescore: Decodable, Play: Decodable>: Decodable {
    struct MetaData: Decodable {
        /// Seconds the server asks clients to wait before the next poll.
        var wait: Int?
        /// `20240701_214404`, UTC.
        var timeStamp: String?
    }

    struct GameData: Decodable {
        struct Game: Decodable {
            var pk: Int?
        }

        struct Status: Decodable {
            /// `Preview`, `Live` or `Final`.
            var abstractGameState: String
            /// NHL: `1` scheduled, `2` pre-game, `3` in progress, `4` critical, `5`...`7` over, `8` time TBD,
            /// `9` postponed.
            var codedGameState: String?
            /// `Scheduled`, `In Progress`, `In Progress - Critical`, `Final`, `Postponed`, `Suspended: Rain`,
            /// `Delayed: Rain`, …
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
            /// NHL's three-letter code, where `abbreviation` is missing.
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

    struct Plays: Decodable {
        var allPlays: [Play]?
        /// Indexes into `allPlays`.
        var scoringPlays: [Int]?
    }

    var gamePk: Int?
    var metaData: MetaData?
    var gameData: GameData
    var liveData: LiveData?
}
