import Foundation

/// The game header that the NHL api-web (`https://api-web.nhle.com`) repeats in every game
/// document: a `/v1/gamecenter/{id}/play-by-play` body and each element of `/v1/score/{date}`'s
/// `games[]`. Only `id`, `gameState` and the teams' `id` are required; unknown keys are ignored.
struct NHLWebGame: Decodable {
    /// Localised text: `{"default": "Lightning", "fr": "..."}`.
    struct Text: Decodable {
        var `default`: String?
    }

    /// `homeTeam` / `awayTeam`. Play-by-play names a team by `placeName` + `commonName`,
    /// the score list by `name`; `score` is absent before the game.
    struct Team: Decodable {
        var id: Int
        var abbrev: String?
        var name: Text?
        var commonName: Text?
        var placeName: Text?
        var score: Int?
    }

    /// `{"number": 3, "periodType": "REG" | "OT" | "SO", "maxRegulationPeriods": 3}`; number 0 before the game.
    struct PeriodDescriptor: Decodable {
        var number: Int?
        var periodType: String?
        var maxRegulationPeriods: Int?
    }

    /// `{"timeRemaining": "09:03", "secondsRemaining": 543, "running": true, "inIntermission": false}`.
    /// During an intermission the numbers count the intermission down, not the period.
    struct Clock: Decodable {
        var timeRemaining: String?
        var secondsRemaining: Int?
        var running: Bool?
        var inIntermission: Bool?
    }

    var id: Int
    /// `FUT`, `PRE`, `LIVE`, `CRIT`, `FINAL`, `OFF` (and `PPD` for some postponed games).
    var gameState: String
    /// `OK`, `PPD` (postponed), `SUSP` (suspended), `CNCL` (cancelled).
    var gameScheduleState: String?
    /// The local calendar date of the game, `YYYY-MM-DD`.
    var gameDate: String?
    var startTimeUTC: Date?
    var venue: Text?
    var homeTeam: Team
    var awayTeam: Team
    var periodDescriptor: PeriodDescriptor?
    /// The score list's bare period number, for games without a `periodDescriptor`.
    var period: Int?
    var clock: Clock?
}
