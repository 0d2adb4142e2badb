import Foundation
import MatchcastCore

/// The bodies of the native v1 feed API (docs/formats.md, "Feed (native v1)") as Matchcast writes them:
/// the fake feed serves them, the MLB adapter converts into them and the benchmarks' feeds serve them.
package enum NativeFeedBody {
    /// `GET /live-matches`.
    package struct LiveMatches: Encodable {
        var retryAfterMs: Int
        var generatedAt: Date
        var matches: [MatchSnapshot]

        package init(retryAfterMs: Int, generatedAt: Date, matches: [MatchSnapshot]) {
            (self.retryAfterMs, self.generatedAt, self.matches) = (retryAfterMs, generatedAt, matches)
        }
    }

    /// `GET /matches/{id}`; `retryAfterMs` is left out when the source gave none.
    package struct Match: Encodable {
        var retryAfterMs: Int?
        var match: MatchSnapshot

        package init(retryAfterMs: Int?, match: MatchSnapshot) {
            (self.retryAfterMs, self.match) = (retryAfterMs, match)
        }
    }

    /// `GET /schedule?date=YYYY-MM-DD`.
    package struct Schedule: Encodable {
        var date: String
        var matches: [MatchSnapshot]

        package init(date: String, matches: [MatchSnapshot]) {
            (self.date, self.matches) = (date, matches)
        }
    }

    /// `{"error": {"code": ..., "message": ...}}`, the house error shape (docs/formats.md, "HTTP API").
    struct Failure: Encodable {
        struct Detail: Encodable {
            var code: String
            var message: String
        }

        var error: Detail
    }

    /// A JSON response; `value` is encoded with `JSON.encoder()`, so equal values give equal bytes.
    static func response(status: Int, headers: [String: String] = [:], encoding value: some Encodable) -> FeedResponse {
        var headers = headers
        headers["content-type"] = "application/json"
        guard let body = try? JSON.encoder().encode(value) else {
            // Only a non-finite number could get here; answer like a server with a bug, never crash.
            return FeedResponse(
                status: 500, headers: ["content-type": "application/json"],
                body: Data(#"{"error":{"code":"internal","message":"response could not be encoded"}}"#.utf8))
        }
        return FeedResponse(status: status, headers: headers, body: body)
    }

    /// An error response in the house shape.
    static func error(status: Int, code: String, message: String, headers: [String: String] = [:]) -> FeedResponse {
        response(status: status, headers: headers, encoding: Failure(error: .init(code: code, message: message)))
    }
}
