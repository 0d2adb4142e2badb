import Foundation

/// The parts of the MLB Stats API live feed (`/api/v1.1/game/{gamePk}/feed/live`) that `MLBLiveFeed` reads: the
/// Stats API envelope with MLB's linescore and plays.
typealias MLBLiveFeedBody = StatsAPILiveFeedBody<MLBLinescore, MLBPlay>

struct MLBLinescore: Decodable {
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

struct MLBPlay: Decodable {
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
