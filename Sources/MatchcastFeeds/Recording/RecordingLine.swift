import Foundation

/// One observation of a recording (docs/formats.md, "Recording"): when it was made, what was asked and what the
/// feed answered.
///
/// `body` holds the raw JSON bytes of the answer, exactly as recorded, so a replay hands the
/// pipeline the bytes the feed sent rather than a re-encoding of them. A 304 has no body.
public struct RecordingLine: Sendable, Hashable {
    /// Seconds since the recording began; finite and never negative.
    public var t: Double
    /// The request path relative to the feed's base (`/matches/ipl-2026-m41`).
    public var request: String
    /// The HTTP status of the answer.
    public var status: Int
    /// Response headers, lower-cased names.
    public var headers: [String: String]
    /// The raw JSON body, or nil when the answer had none.
    public var body: Data?

    public init(t: Double, request: String, status: Int, headers: [String: String] = [:], body: Data? = nil) {
        self.t = t
        self.request = request
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// A line recording `response` to `request` at `t`.
    public init(t: Double, request: String, response: FeedResponse) {
        self.init(t: t, request: request, status: response.status, headers: response.headers, body: response.body)
    }

    /// The answer as the polling pipeline takes it; header names lower-cased.
    public var response: FeedResponse {
        var lowered: [String: String] = [:]
        for (name, value) in headers { lowered[name.lowercased()] = value }
        return FeedResponse(status: status, headers: lowered, body: body)
    }

    /// The request as the pipeline would have sent it.
    public var feedRequest: FeedRequest { FeedRequest(path: request) }
}
