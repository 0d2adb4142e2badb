import Foundation

/// The validators of the last good response, sent back so an unchanged resource costs a 304.
///
/// Callers record a 200 only once its body decoded: remembering the `ETag` of a body that could not
/// be read would turn every later poll into a 304 for content Matchcast never saw.
public struct ConditionalRequestState: Sendable, Hashable {
    /// The `ETag` of the last recorded 200, sent as `If-None-Match`.
    public private(set) var etag: String?
    /// The `Last-Modified` of the last recorded 200, sent as `If-Modified-Since`.
    public private(set) var lastModified: String?

    public init(etag: String? = nil, lastModified: String? = nil) {
        self.etag = etag
        self.lastModified = lastModified
    }

    /// Takes the validators of a 200 (a validator it lacks is forgotten) or of a 304 (only those it
    /// carries are updated, since a 304 may repeat them or omit them). Other statuses change nothing.
    public mutating func record(_ response: FeedResponse) {
        switch response.status {
        case 200:
            etag = Self.nonEmpty(response.headers["etag"])
            lastModified = Self.nonEmpty(response.headers["last-modified"])
        case 304:
            if let value = Self.nonEmpty(response.headers["etag"]) { etag = value }
            if let value = Self.nonEmpty(response.headers["last-modified"]) { lastModified = value }
        default:
            break
        }
    }

    /// `request` with `if-none-match` / `if-modified-since` added for the validators known.
    public func apply(to request: FeedRequest) -> FeedRequest {
        var request = request
        if let etag { request.headers["if-none-match"] = etag }
        if let lastModified { request.headers["if-modified-since"] = lastModified }
        return request
    }

    /// Forgets both validators, so the next request fetches the full body.
    public mutating func reset() {
        etag = nil
        lastModified = nil
    }

    /// `value` without the whitespace around it; nil when nothing is left. A value with none (the usual case, read on
    /// every answer) is the header's own string, not a copy.
    private static func nonEmpty(_ value: String?) -> String? {
        guard let value else { return nil }
        let trimmed = value.trimmingHTTPWhitespace()
        guard !trimmed.isEmpty else { return nil }
        return trimmed.startIndex == value.startIndex && trimmed.endIndex == value.endIndex ? value : String(trimmed)
    }
}
