import Foundation

/// A request to a feed, relative to its base: `/live-matches`, `/matches/{id}`, `/schedule?date=...`.
public struct FeedRequest: Sendable, Hashable {
    public var path: String
    /// Extra request headers, lower-cased names (`if-none-match`, `if-modified-since`).
    public var headers: [String: String]

    public init(path: String, headers: [String: String] = [:]) {
        self.path = path
        self.headers = headers
    }

    public static let liveMatches = FeedRequest(path: "/live-matches")

    public static func match(_ id: String) -> FeedRequest {
        FeedRequest(path: "/matches/" + (id.addingPercentEncoding(withAllowedCharacters: .urlPathAllowed.subtracting(["/"])) ?? id))
    }

    public static func schedule(date: String) -> FeedRequest {
        FeedRequest(path: "/schedule?date=\(date)")
    }
}

/// What a feed answered: status, headers (lower-cased names) and body. A 304 has no body.
public struct FeedResponse: Sendable, Hashable {
    public var status: Int
    public var headers: [String: String]
    public var body: Data?

    public init(status: Int, headers: [String: String] = [:], body: Data? = nil) {
        self.status = status
        self.headers = headers
        self.body = body
    }
}

/// The one seam between the polling pipeline and where feed answers come from:
/// HTTP, the in-process fake feed, an adapter (MLB) or a recording.
public protocol FeedTransport: Sendable {
    /// Sends one request. Throws only when no answer came at all (refused, timed out);
    /// any HTTP status, including errors, is returned as a response.
    func fetch(_ request: FeedRequest) async throws -> FeedResponse
}
