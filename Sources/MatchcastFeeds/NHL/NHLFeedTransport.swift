import Foundation
import MatchcastCore

/// Serves the native v1 feed API (docs/formats.md, "Feed (native v1)") from the NHL api-web, by wrapping a transport
/// pointed at its base (`NHLFeedTransport.defaultBaseURL` unless configured). Match ids are
/// `nhl:<game id>` (`nhl:2024030121`).
///
/// - `/live-matches` makes one `/v1/score/now` request and lists the games being played or just
///   finished (`gameState` `FINAL`, before it turns `OFF`), so followers see them end.
/// - `/matches/nhl:{id}` fetches `/v1/gamecenter/{id}/play-by-play` (see `NHLWebFeed`). When that fails (a
///   transport error, a 5xx or 429, a body that cannot be converted), the game is served from `/v1/score/now`'s
///   entry for it instead, without its goal list: the score list alone is enough to follow a game, the
///   play-by-play only adds detail, and both give the same `seq` at one moment.
/// - `/schedule?date=YYYY-MM-DD` fetches `/v1/score/{date}` and lists every game in it.
///
/// `retryAfterMs` is the upstream `Cache-Control: max-age` when it gives one (≥ 1 s), else
/// `defaultRetryAfterMs` for the most urgent status in the answer (10 s live). `If-None-Match`
/// and `If-Modified-Since` go upstream; `ETag`, `Last-Modified` and 304s come back, as do error
/// statuses. A 200 that cannot be converted becomes a 502 naming the field; an id that is not
/// `nhl:` and digits, or any other path, a 404; a schedule without a valid date a 400.
public struct NHLFeedTransport: FeedTransport {
    /// Where the NHL api-web lives.
    public static let defaultBaseURL = "https://api-web.nhle.com"

    /// The prefix of every match id this adapter serves.
    public static let idPrefix = "nhl:"

    /// Response headers that still describe the converted body.
    private static let forwardedHeaders = ["etag", "last-modified", "cache-control", "retry-after", "date"]

    /// The poll interval asked for when upstream gives no `max-age`: 10 s while a game is played,
    /// 30 s in an intermission, a minute before it, five once it is over.
    public static func defaultRetryAfterMs(for status: MatchStatus) -> Int {
        switch status {
        case .live: 10_000
        case .break: 30_000
        case .scheduled, .postponed: 60_000
        case .completed, .abandoned: 300_000
        }
    }

    public let upstream: any FeedTransport
    private let now: @Sendable () -> Date

    /// - Parameters:
    ///   - upstream: a transport whose base is the NHL api-web (`defaultBaseURL`).
    ///   - now: stamps `generatedAt` on the live list when upstream sends no `Date` header.
    public init(upstream: any FeedTransport, now: @escaping @Sendable () -> Date = { Date() }) {
        self.upstream = upstream
        self.now = now
    }

    public func fetch(_ request: FeedRequest) async throws -> FeedResponse {
        let path = request.resource
        if path == "/live-matches" {
            return try await liveMatches(request)
        }
        if path == "/schedule" {
            return try await schedule(request)
        }
        guard path.hasPrefix("/matches/") else {
            return NativeFeedBody.error(
                status: 404, code: "not_found",
                message: "the NHL adapter serves /live-matches, /matches/nhl:{id} and /schedule; \(path.prefix(80)) is not available")
        }
        let raw = String(path.dropFirst("/matches/".count))
        let id = raw.removingPercentEncoding ?? raw
        let gameId = id.hasPrefix(Self.idPrefix) ? id.dropFirst(Self.idPrefix.count) : ""
        guard !gameId.isEmpty, gameId.utf8.count <= 18, gameId.first != "0", gameId.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") })
        else {
            return NativeFeedBody.error(
                status: 404, code: "not_found", message: "'\(id.prefix(40))' is not an NHL match id (nhl:<game id>, e.g. nhl:2024030121)")
        }
        let answer: FeedResponse
        do {
            answer = try await upstream.fetch(conditional(request, path: "/v1/gamecenter/\(gameId)/play-by-play"))
        } catch {
            if let fallback = try? await fromScoreList(id: id) { return fallback }
            throw error
        }
        guard answer.status == 200 else {
            guard answer.status >= 500 || answer.status == 429 else { return answer }
            return (try? await fromScoreList(id: id)) ?? answer
        }
        let snapshot: MatchSnapshot
        do {
            snapshot = try NHLWebFeed.snapshot(fromPlayByPlay: answer.body ?? Data())
            guard snapshot.id == id else {
                throw InputError(field: "id", reason: "expected \(gameId), got \(snapshot.id.dropFirst(Self.idPrefix.count))")
            }
        } catch {
            return (try? await fromScoreList(id: id)) ?? Self.badBody("NHL play-by-play \(gameId)", error)
        }
        let body = NativeFeedBody.Match(retryAfterMs: Self.retryAfterMs(answer, statuses: [snapshot.status]), match: snapshot)
        return NativeFeedBody.response(status: 200, headers: Self.forwarded(answer), encoding: body)
    }

    /// The game `id` from today's score list, when the play-by-play cannot serve it; nil when the list does not
    /// have it or cannot be had. No validators come with it: they are the list's, not the game's, and a client that
    /// sent them back for the play-by-play would be told a changed game is unchanged.
    private func fromScoreList(id: String) async throws -> FeedResponse? {
        let answer = try await upstream.fetch(FeedRequest(path: "/v1/score/now"))
        guard answer.status == 200,
              let game = try? NHLWebFeed.scoreList(answer.body ?? Data()).games.first(where: { $0.snapshot.id == id })
        else { return nil }
        let body = NativeFeedBody.Match(retryAfterMs: Self.retryAfterMs(answer, statuses: [game.snapshot.status]), match: game.snapshot)
        let headers = Self.forwarded(answer).filter { $0.key != "etag" && $0.key != "last-modified" }
        return NativeFeedBody.response(status: 200, headers: headers, encoding: body)
    }

    private func liveMatches(_ request: FeedRequest) async throws -> FeedResponse {
        let answer = try await upstream.fetch(conditional(request, path: "/v1/score/now"))
        guard answer.status == 200 else { return answer }
        let games: [(gameState: String, snapshot: MatchSnapshot)]
        do {
            games = try NHLWebFeed.scoreList(answer.body ?? Data()).games
        } catch {
            return Self.badBody("NHL score/now", error)
        }
        let listed = games.filter { $0.snapshot.status.isInProgress || $0.gameState == "FINAL" }.map(\.snapshot)
        let body = NativeFeedBody.LiveMatches(
            retryAfterMs: Self.retryAfterMs(answer, statuses: listed.map(\.status)),
            generatedAt: NHLWebFeed.wholeSeconds(answer.headers["date"].flatMap(HTTPDate.parse) ?? now()),
            matches: listed)
        return NativeFeedBody.response(status: 200, headers: Self.forwarded(answer), encoding: body)
    }

    private func schedule(_ request: FeedRequest) async throws -> FeedResponse {
        guard let date = request.queryValue("date"), FeedRequest.isCalendarDate(date) else {
            return NativeFeedBody.error(status: 400, code: "bad_request", message: "date must be YYYY-MM-DD")
        }
        let answer = try await upstream.fetch(conditional(request, path: "/v1/score/\(date)"))
        guard answer.status == 200 else { return answer }
        let games: [MatchSnapshot]
        do {
            games = try NHLWebFeed.snapshots(fromScore: answer.body ?? Data()).matches
        } catch {
            return Self.badBody("NHL score \(date)", error)
        }
        let body = NativeFeedBody.Schedule(date: date, matches: games)
        return NativeFeedBody.response(status: 200, headers: Self.forwarded(answer), encoding: body)
    }

    /// The upstream request for `path`, carrying the client's conditional headers.
    private func conditional(_ request: FeedRequest, path: String) -> FeedRequest {
        var upstreamRequest = FeedRequest(path: path)
        for name in ["if-none-match", "if-modified-since"] {
            upstreamRequest.headers[name] = request.headers[name]
        }
        return upstreamRequest
    }

    private static func forwarded(_ answer: FeedResponse) -> [String: String] {
        answer.headers.filter { forwardedHeaders.contains($0.key) }
    }

    /// No ETag: a client must not be told later that this unusable body is still current.
    private static func badBody(_ what: String, _ error: any Error) -> FeedResponse {
        NativeFeedBody.error(status: 502, code: "bad_upstream_body", message: "\(what): \(InputError(error))")
    }

    /// Upstream `max-age` (at least one second) or the default for the most urgent status.
    static func retryAfterMs(_ answer: FeedResponse, statuses: [MatchStatus]) -> Int {
        if let maxAge = maxAge(answer.headers["cache-control"]), maxAge >= 1 {
            return min(maxAge, 86_400) * 1000
        }
        return statuses.map(defaultRetryAfterMs(for:)).min() ?? defaultRetryAfterMs(for: .scheduled)
    }

    /// `max-age=N` in a `Cache-Control` value.
    static func maxAge(_ cacheControl: String?) -> Int? {
        guard let cacheControl else { return nil }
        for directive in cacheControl.split(separator: ",") {
            let parts = directive.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
            guard parts.count == 2, parts[0].lowercased() == "max-age" else { continue }
            let value = parts[1].trimmingCharacters(in: CharacterSet(charactersIn: "\""))
            guard value.utf8.count <= 9, let seconds = Int(value), seconds >= 0 else { return nil }
            return seconds
        }
        return nil
    }
}
