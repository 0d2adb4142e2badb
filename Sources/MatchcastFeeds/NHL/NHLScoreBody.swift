import Foundation

/// The NHL api-web score list (`GET /v1/score/{YYYY-MM-DD}` and `/v1/score/now`): the day's
/// games, each with the header `NHLWebGame` reads. Unknown keys are ignored.
struct NHLScoreBody: Decodable {
    /// The day the list is for, `YYYY-MM-DD`.
    var currentDate: String?
    var games: [NHLWebGame]
}
