import Foundation

/// The per-play parts of the MLB Stats API live feed that `MLBImporter` reads (the whole-game
/// parts are `MLBLiveFeed`'s). Unknown keys are ignored.
struct MLBPlayByPlayBody: Decodable {
    struct MetaData: Decodable {
        var wait: Int?
        var timeStamp: String?
    }

    struct LiveData: Decodable {
        var plays: Plays?
    }

    struct Plays: Decodable {
        var allPlays: [Play]?
    }

    struct Play: Decodable {
        struct Result: Decodable {
            var description: String?
            var event: String?
            var homeScore: Int?
            var awayScore: Int?
        }

        struct About: Decodable {
            var atBatIndex: Int?
            var inning: Int
            /// `top` or `bottom`.
            var halfInning: String
            var startTime: Date?
            var endTime: Date?
            var isScoringPlay: Bool?
            var isComplete: Bool?
        }

        struct Count: Decodable {
            var outs: Int?
        }

        /// Runners after the play: a key is present when a runner is on that base.
        struct Matchup: Decodable {
            struct Runner: Decodable {
                var id: Int?
            }

            var postOnFirst: Runner?
            var postOnSecond: Runner?
            var postOnThird: Runner?
        }

        var atBatIndex: Int?
        var result: Result?
        var about: About
        var count: Count?
        var matchup: Matchup?
    }

    var metaData: MetaData?
    var liveData: LiveData?
}
