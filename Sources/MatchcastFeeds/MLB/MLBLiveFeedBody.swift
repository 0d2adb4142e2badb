import Foundation

/// The parts of the MLB Stats API live feed (`/api/v1.1/game/{gamePk}/feed/live`) that
/// `MLBLiveFeed` reads. Everything the API may leave out is optional; unknown keys are ignored.
struct MLBLiveFeedBody: Decodable {
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
            /// `Scheduled`, `In Progress`, `Final`, `Postponed`, `Suspended: Rain`, `Delayed: Rain`, …
            var detailedState: String?
        }

        struct Teams: Decodable {
            var home: TeamInfo
            var away: TeamInfo
        }

        struct TeamInfo: Decodable {
            var id: Int
            var name: String
            var abbreviation: String?
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
            var home: Runs?
            var away: Runs?
        }

        struct Runs: Decodable {
            var runs: Int?
        }

        /// Presence of a key means a runner is on that base.
        struct Offense: Decodable {
            var first: Runner?
            var second: Runner?
            var third: Runner?
        }

        struct Runner: Decodable {
            var id: Int?
        }

        var currentInning: Int?
        var inningHalf: String?
        var isTopInning: Bool?
        var outs: Int?
        var teams: Teams?
        var offense: Offense?
    }

    struct Plays: Decodable {
        var allPlays: [Play]?
        /// Indexes into `allPlays`.
        var scoringPlays: [Int]?
    }

    struct Play: Decodable {
        struct Result: Decodable {
            var description: String?
            var event: String?
        }

        struct About: Decodable {
            var atBatIndex: Int?
            var endTime: Date?
        }

        /// Only counted: pitches, pickoffs, substitutions within the plate appearance.
        struct Event: Decodable {}

        var atBatIndex: Int?
        var result: Result?
        var about: About?
        var playEvents: [Event]?
    }

    var gamePk: Int?
    var metaData: MetaData?
    var gameData: GameData
    var liveData: LiveData?
}
