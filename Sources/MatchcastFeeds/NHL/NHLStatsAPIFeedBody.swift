import Foundation

/// The parts of the legacy NHL Stats API live feed (`statsapi.web.nhl.com/api/v1/game/{gamePk}/feed/live`) that
/// `NHLStatsAPIFeed` reads: the Stats API envelope with the NHL's linescore and plays.
typealias NHLStatsAPIFeedBody = StatsAPILiveFeedBody<NHLStatsAPILinescore, NHLStatsAPIPlay>

struct NHLStatsAPILinescore: Decodable {
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

struct NHLStatsAPIPlay: Decodable {
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
