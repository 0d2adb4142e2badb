import Foundation
import MatchcastFeeds

/// Feed bodies for tests, written as the JSON a feed would send (docs/formats.md, "Feed (native v1)").
enum Fixtures {
    /// A fixed wall-clock time: 2026-04-21T15:12:09Z.
    static let now = Date(timeIntervalSince1970: 1_776_784_329)

    /// Timing with no jitter, so delays are exact.
    static let policy = PollTimingPolicy(
        defaultInterval: .seconds(10), minInterval: .seconds(2), maxInterval: .seconds(60),
        jitter: 0, backoffBase: .seconds(4), backoffCap: .seconds(64))

    static func snapshot(id: String, seq: Int? = nil, status: String = "live", home: Int = 0, away: Int = 0) -> String {
        let seqField = seq.map { "\"seq\": \($0), " } ?? ""
        return """
            {"id": "\(id)", "sport": "football", "status": "\(status)", \(seqField)\
            "home": {"id": "h", "name": "Home FC"}, "away": {"id": "a", "name": "Away FC"}, \
            "score": {"home": \(home), "away": \(away), "period": "2H"}}
            """
    }

    /// A snapshot whose score is not a number: decoding names `score.home`.
    static func malformed(id: String) -> String {
        """
        {"id": "\(id)", "sport": "football", "status": "live", \
        "home": {"id": "h", "name": "Home FC"}, "away": {"id": "a", "name": "Away FC"}, \
        "score": {"home": "two", "away": 0}}
        """
    }

    static func matchBody(_ snapshot: String, retryAfterMs: Int? = nil) -> Data {
        let retry = retryAfterMs.map { "\"retryAfterMs\": \($0), " } ?? ""
        return Data("{\(retry)\"match\": \(snapshot)}".utf8)
    }

    static func listBody(_ snapshots: [String], retryAfterMs: Int? = nil) -> Data {
        let retry = retryAfterMs.map { "\"retryAfterMs\": \($0), " } ?? ""
        return Data("{\(retry)\"generatedAt\": \"2026-04-21T15:12:09Z\", \"matches\": [\(snapshots.joined(separator: ", "))]}".utf8)
    }

    static func scheduleBody(date: String, _ snapshots: [String]) -> Data {
        Data("{\"date\": \"\(date)\", \"matches\": [\(snapshots.joined(separator: ", "))]}".utf8)
    }

    static func ok(_ body: Data, headers: [String: String] = [:]) -> FeedResponse {
        FeedResponse(status: 200, headers: headers, body: body)
    }
}
