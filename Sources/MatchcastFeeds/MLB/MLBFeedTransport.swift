import Foundation
import MatchcastCore

/// Serves the native v1 feed API (docs/formats.md, "Feed (native v1)") from the MLB Stats API, by wrapping a
/// transport pointed at the MLB base (`MLBFeedTransport.defaultBaseURL` unless configured).
///
/// - `/matches/mlb:{gamePk}` fetches `/api/v1.1/game/{gamePk}/feed/live` and answers a 200 with
///   `{"retryAfterMs": wait × 1000, "match": snapshot}` (see `MLBLiveFeed`), the snapshot's id `mlb:{gamePk}` like
///   every provider's (`nhl:…`, `espn:…`); `If-None-Match`, `ETag`, `Last-Modified` and 304s pass through, as do
///   error statuses. A bare `/matches/{gamePk}` (the id before provider prefixes) is served the same way, its
///   snapshot's id the bare gamePk, so that matches already followed by it go on.
/// - A 200 whose body cannot be converted becomes a 502 with an `{"error": ...}` body naming
///   the field: the upstream answered, but not with anything a match can be read from.
/// - `/live-matches`, `/schedule` and any id that is not a gamePk get a 404 with an
///   `{"error": ...}` body: the live feed is per game, so follow games by gamePk.
public struct MLBFeedTransport: FeedTransport {
    /// Where the MLB Stats API lives.
    public static let defaultBaseURL = "https://statsapi.mlb.com"
    /// The prefix of the match ids this adapter serves (`mlb:744914`).
    public static let idPrefix = "mlb:"

    /// Response headers that still describe the converted body.
    private static let forwardedHeaders = ["etag", "last-modified", "cache-control", "retry-after", "date"]

    public let upstream: any FeedTransport
    /// Each game's last whole document, when polls after the first ask for a diff only.
    private let documents: MLBGameDocuments?

    /// - Parameters:
    ///   - upstream: a transport whose base is the MLB Stats API (`defaultBaseURL`).
    ///   - diffPatch: after a game's first whole feed, ask `…/feed/live/diffPatch?startTimecode=` for what changed
    ///     since (a few hundred bytes where the whole feed is hundreds of KB) and apply it to the held document; any
    ///     answer that is not a diff or a whole document, or a diff that does not apply, fetches the whole feed again.
    ///     The answers then carry this adapter's own `ETag` (`"mlb-<timeStamp>"`), and a poll holding it gets a 304.
    public init(upstream: any FeedTransport, diffPatch: Bool = false) {
        self.upstream = upstream
        self.documents = diffPatch ? MLBGameDocuments() : nil
    }

    public func fetch(_ request: FeedRequest) async throws -> FeedResponse {
        let path = request.resource
        guard path.hasPrefix("/matches/") else {
            return NativeFeedBody.error(
                status: 404, code: "not_supported",
                message: "the MLB adapter serves /matches/{gamePk} only; \(path) is not available")
        }
        let id = String(path.dropFirst("/matches/".count))
        let prefix = id.hasPrefix(Self.idPrefix) ? Self.idPrefix : ""
        let gamePk = String(id.dropFirst(prefix.count))
        guard !gamePk.isEmpty, gamePk.utf8.count <= 18, gamePk.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") })
        else {
            return NativeFeedBody.error(
                status: 404, code: "not_found", message: "'\(id.prefix(40))' is not an MLB match id (mlb:<gamePk>, e.g. mlb:744914)")
        }

        if let documents { return try await patchedAnswer(gamePk: gamePk, prefix: prefix, request: request, documents: documents) }
        var upstreamRequest = FeedRequest(path: "/api/v1.1/game/\(gamePk)/feed/live")
        for name in ["if-none-match", "if-modified-since"] {
            upstreamRequest.headers[name] = request.headers[name]
        }
        let answer = try await upstream.fetch(upstreamRequest)
        guard answer.status == 200 else { return answer }

        let headers = answer.headers.filter { Self.forwardedHeaders.contains($0.key) }
        return Self.converted(answer.body ?? Data(), gamePk: gamePk, prefix: prefix, headers: headers)
    }

    /// The native answer for a live feed document; a body that cannot be converted is a 502 naming the field, without
    /// an ETag: a client must not be told later that this unusable body is still current.
    private static func converted(_ feed: Data, gamePk: String, prefix: String, headers: [String: String]) -> FeedResponse {
        var converted: (snapshot: MatchSnapshot, waitSeconds: Int?)
        do {
            converted = try MLBLiveFeed.snapshot(from: feed)
            // The feed's own gamePk, under the id's prefix: a poll of another game's id sees the mismatch.
            converted.snapshot.id = prefix + converted.snapshot.id
        } catch {
            return NativeFeedBody.error(status: 502, code: "bad_upstream_body", message: "MLB live feed \(gamePk): \(error)")
        }
        let body = NativeFeedBody.Match(
            retryAfterMs: converted.waitSeconds.map { max($0, 0) * 1000 }, match: converted.snapshot)
        return NativeFeedBody.response(status: 200, headers: headers, encoding: body)
    }

    /// A game's answer from its held document and a diff, or from the whole feed when nothing is held or the diff
    /// cannot be used.
    private func patchedAnswer(gamePk: String, prefix: String, request: FeedRequest, documents: MLBGameDocuments) async throws
        -> FeedResponse
    {
        var document: JSONValue?
        if let held = documents.document(gamePk), let stamp = MLBGameDocuments.timeStamp(of: held) {
            let diff = try await upstream.fetch(FeedRequest(path: "/api/v1.1/game/\(gamePk)/feed/live/diffPatch?startTimecode=\(stamp)"))
            if diff.status == 200, let body = diff.body { document = MLBGameDocuments.patched(held, with: body) }
        }
        if document == nil {
            let answer = try await upstream.fetch(FeedRequest(path: "/api/v1.1/game/\(gamePk)/feed/live"))
            guard answer.status == 200 else { return answer }
            document = JSONValue.parse(answer.body ?? Data())
            guard document != nil else {
                documents.forget(gamePk)
                return Self.converted(answer.body ?? Data(), gamePk: gamePk, prefix: prefix, headers: [:])
            }
        }
        guard let document, let feed = try? document.data() else {
            return NativeFeedBody.error(status: 502, code: "bad_upstream_body", message: "MLB live feed \(gamePk): not JSON")
        }
        let converted = Self.converted(feed, gamePk: gamePk, prefix: prefix, headers: [:])
        guard converted.status == 200, let stamp = MLBGameDocuments.timeStamp(of: document) else {
            documents.forget(gamePk)
            return converted
        }
        documents.store(document, for: gamePk)
        let etag = "\"mlb-\(stamp)\""
        if request.headers["if-none-match"] == etag { return FeedResponse(status: 304, headers: ["etag": etag]) }
        var answer = converted
        answer.headers["etag"] = etag
        return answer
    }
}
