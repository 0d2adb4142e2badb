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
        FeedRequest(path: "/matches/" + (id.addingPercentEncoding(withAllowedCharacters: pathSegmentAllowed) ?? id))
    }

    /// What a path segment may carry unencoded: a path's characters but `/`.
    private static let pathSegmentAllowed = CharacterSet.urlPathAllowed.subtracting(["/"])

    public static func schedule(date: String) -> FeedRequest {
        FeedRequest(path: "/schedule?date=\(date)")
    }

    /// `path` without its query (`/schedule` of `/schedule?date=2026-04-21`).
    public var resource: String {
        guard let mark = path.firstIndex(of: "?") else { return path }
        return String(path[..<mark])
    }

    /// The first value of `name` in the query, percent-decoded (`""` for a name without `=`); nil when absent.
    public func queryValue(_ name: String) -> String? {
        guard let mark = path.firstIndex(of: "?") else { return nil }
        for pair in path[path.index(after: mark)...].split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            if parts.first == Substring(name) {
                let value = parts.count > 1 ? String(parts[1]) : ""
                return value.removingPercentEncoding ?? value
            }
        }
        return nil
    }

    /// `YYYY-MM-DD` with a month and day that can exist: what a schedule's `date` must be.
    public static func isCalendarDate(_ text: String) -> Bool {
        let bytes = Array(text.utf8)
        guard bytes.count == 10, bytes[4] == UInt8(ascii: "-"), bytes[7] == UInt8(ascii: "-") else { return false }
        let digits = [0, 1, 2, 3, 5, 6, 8, 9]
        guard digits.allSatisfy({ bytes[$0] >= UInt8(ascii: "0") && bytes[$0] <= UInt8(ascii: "9") }),
            let month = Int(text.dropFirst(5).prefix(2)), let day = Int(text.suffix(2))
        else { return false }
        return (1...12).contains(month) && (1...31).contains(day)
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
