import Foundation
import MatchcastCore

/// Serves the native v1 feed API (docs/formats.md, "Feed (native v1)") for one ESPN `{sport}/{league}` from the ESPN
/// site API (`ESPNFeedTransport.defaultBaseURL` unless configured).
///
/// - `/live-matches`: the league's scoreboard (`/apis/site/v2/sports/{sport}/{league}/scoreboard`),
///   listing the matches in progress or finished; scheduled and postponed ones are left out.
/// - `/matches/espn:<id>`: the match from the league's scoreboard, with the key events and venue
///   of its summary (`…/summary?event=<id>`) when that answers; when the summary fails the match
///   is served from the scoreboard alone. A match not on the current scoreboard is read from its
///   summary alone (no clock); when neither knows it, a 404.
/// - `/schedule?date=YYYY-MM-DD`: the scoreboard of that day (`…/scoreboard?dates=YYYYMMDD`).
///
/// One scoreboard answer serves every match of the league for its freshness window (the
/// upstream's `cache-control: max-age`, clamped to 2…300 s, else `defaultFreshness`), so fifty
/// followed matches cost one scoreboard request per window, not fifty; concurrent requests
/// share one upstream fetch. Once stale it is revalidated with `If-None-Match` /
/// `If-Modified-Since`. Summaries are kept for the same window (a failed one too, so it is not
/// retried on every poll), and for good once the match is final; scheduled matches skip them.
///
/// `retryAfterMs` is the upstream's `max-age` when it sent one, else by status: 10 s in
/// progress, 60 s scheduled or postponed, 300 s final. Every 200 carries an `ETag` of its body
/// and a matching `If-None-Match` gets a 304. Upstream error statuses pass through; a 200 that
/// cannot be read, or a match that cannot be converted, is a 502 `bad_upstream_body` naming the
/// field; an id that is not `espn:<digits>` or that ESPN does not know is a 404 `not_found`.
public actor ESPNFeedTransport: FeedTransport {
    /// Where the ESPN site API lives.
    public static let defaultBaseURL = "https://site.api.espn.com"
    /// The prefix of every match id this adapter serves (`espn:401547417`).
    public static let idPrefix = "espn:"
    /// How long a scoreboard answer is used when the upstream sends no `max-age`.
    public static let defaultFreshness: Duration = .seconds(10)
    /// Summaries of final matches kept at most.
    static let finalSummaryLimit = 256

    public let league: ESPNLeague
    private let upstream: any FeedTransport
    private let uptime: @Sendable () -> Duration
    private let wallClock: @Sendable () -> Date

    /// A scoreboard answer and when it was fetched.
    private struct Board: Sendable {
        var fetchedAt: Duration
        var generatedAt: Date
        var events: [ESPNConvertedEvent]
        var byId: [String: ESPNConvertedEvent]
        var maxAge: Int?
        var etag: String?
        var lastModified: String?
    }

    /// What asking for the scoreboard gave: a board, or an answer to pass on as it is.
    private enum BoardOutcome: Sendable {
        case board(Board)
        case answer(FeedResponse)
    }

    private struct SummaryEntry {
        var fetchedAt: Duration
        var body: ESPNSummaryBody?
        var final: Bool
    }

    private var board: Board?
    private var refreshing: Task<BoardOutcome, any Error>?
    private var summaries: [String: SummaryEntry] = [:]
    /// Summary requests on their way, by event: callers that find one wait for it rather than asking again (the
    /// actor lets a second caller in while the first awaits the upstream).
    private var summaryFetches: [String: Task<ESPNSummaryBody?, Never>] = [:]

    /// - Parameters:
    ///   - league: the `{sport}/{league}` served; events are refused when Matchcast has no model for the sport.
    ///   - upstream: a transport whose base is the ESPN site API (`defaultBaseURL`).
    ///   - uptime: monotonic time since any fixed origin, for freshness windows.
    ///   - now: wall-clock time, for `generatedAt`.
    public init(
        league: ESPNLeague, upstream: any FeedTransport,
        uptime: @escaping @Sendable () -> Duration = ESPNFeedTransport.continuousUptime(),
        now: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.league = league
        self.upstream = upstream
        self.uptime = uptime
        self.wallClock = now
    }

    /// Time since this call, on `ContinuousClock`.
    public static func continuousUptime() -> @Sendable () -> Duration {
        let origin = ContinuousClock.now
        return { ContinuousClock.now - origin }
    }

    /// Time since this call, on `clock`.
    public static func uptime<C: Clock<Duration>>(on clock: C) -> @Sendable () -> Duration {
        let origin = clock.now
        return { origin.duration(to: clock.now) }
    }

    public func fetch(_ request: FeedRequest) async throws -> FeedResponse {
        let path = request.resource
        if path == "/live-matches" {
            return try await liveMatches(request)
        }
        if path.hasPrefix("/matches/") {
            let raw = String(path.dropFirst("/matches/".count))
            return try await match(raw.removingPercentEncoding ?? raw, request: request)
        }
        if path == "/schedule" {
            return try await schedule(date: request.queryValue("date"), request: request)
        }
        return NativeFeedBody.error(status: 404, code: "not_found", message: "no resource at \(path.prefix(100))")
    }

    // MARK: Routes

    private func liveMatches(_ request: FeedRequest) async throws -> FeedResponse {
        let board: Board
        switch try await currentBoard() {
        case .answer(let answer): return answer
        case .board(let current): board = current
        }
        let listed = board.events.compactMap(\.snapshot).filter { $0.status.isInProgress || $0.status.isFinal }
        let retry = board.maxAge.map { $0 * 1000 }
            ?? (listed.contains { $0.status.isInProgress } ? 10_000 : 60_000)
        let body = ESPNNativeBody.LiveMatches(
            retryAfterMs: retry, generatedAt: board.generatedAt, matches: listed,
            skipped: ESPNNativeBody.skipped(board.events))
        return Self.conditional(request, body: body)
    }

    private func match(_ id: String, request: FeedRequest) async throws -> FeedResponse {
        guard id.hasPrefix(Self.idPrefix), case let eventId = String(id.dropFirst(Self.idPrefix.count)), Self.isEventId(eventId) else {
            return NativeFeedBody.error(
                status: 404, code: "not_found", message: "'\(id.prefix(60))' is not an ESPN match id (espn:<event id>)")
        }
        let board: Board
        switch try await currentBoard() {
        case .answer(let answer): return answer
        case .board(let current): board = current
        }
        guard let event = board.byId[eventId] else {
            return try await summaryOnly(eventId, request: request)
        }
        let snapshot: MatchSnapshot
        switch event.result {
        case .failure(let error):
            return NativeFeedBody.error(
                status: 502, code: "bad_upstream_body", message: "ESPN \(league) scoreboard, event \(eventId): \(error)")
        case .success(let converted):
            snapshot = converted
        }
        var enriched = snapshot
        if snapshot.status != .scheduled && snapshot.status != .postponed,
            let summary = try await summary(eventId, final: snapshot.status.isFinal)
        {
            enriched = ESPNEventConverter.enrich(snapshot, with: summary, league: league)
        }
        let body = NativeFeedBody.Match(retryAfterMs: retryAfterMs(enriched.status, maxAge: board.maxAge), match: enriched)
        return Self.conditional(request, body: body)
    }

    /// A match the scoreboard does not list (another day's): its summary alone, or a 404.
    private func summaryOnly(_ eventId: String, request: FeedRequest) async throws -> FeedResponse {
        let answer = try await upstream.fetch(FeedRequest(path: summaryPath(eventId)))
        let notFound = NativeFeedBody.error(
            status: 404, code: "not_found", message: "no ESPN \(league) event \(eventId) on the scoreboard or in a summary")
        guard answer.status == 200 else {
            return (400..<500).contains(answer.status) ? notFound : answer
        }
        let summary: ESPNSummaryBody
        let snapshot: MatchSnapshot
        do {
            summary = try ESPNEventConverter.summaryBody(answer.body ?? Data())
            guard summary.header.id == eventId else { return notFound }
            snapshot = try ESPNEventConverter.snapshot(fromSummary: answer.body ?? Data(), league: league)
        } catch {
            return NativeFeedBody.error(
                status: 502, code: "bad_upstream_body", message: "ESPN \(league) summary \(eventId): \(error)")
        }
        let maxAge = Self.maxAge(answer.headers["cache-control"])
        let body = NativeFeedBody.Match(retryAfterMs: retryAfterMs(snapshot.status, maxAge: maxAge), match: snapshot)
        return Self.conditional(request, body: body)
    }

    private func schedule(date: String?, request: FeedRequest) async throws -> FeedResponse {
        guard let date, FeedRequest.isCalendarDate(date) else {
            return NativeFeedBody.error(status: 400, code: "bad_request", message: "date must be YYYY-MM-DD")
        }
        let compact = date.replacingOccurrences(of: "-", with: "")
        let answer = try await upstream.fetch(FeedRequest(path: "\(league.apiPrefix)/scoreboard?dates=\(compact)"))
        guard answer.status == 200 else { return answer }
        let events: [ESPNConvertedEvent]
        do {
            events = try ESPNEventConverter.events(fromScoreboard: answer.body ?? Data(), league: league)
        } catch {
            return NativeFeedBody.error(
                status: 502, code: "bad_upstream_body", message: "ESPN \(league) scoreboard for \(date): \(error)")
        }
        let body = ESPNNativeBody.Schedule(
            date: date, matches: events.compactMap(\.snapshot), skipped: ESPNNativeBody.skipped(events))
        return Self.conditional(request, body: body)
    }

    private func retryAfterMs(_ status: MatchStatus, maxAge: Int?) -> Int {
        if let maxAge { return maxAge * 1000 }
        switch status {
        case .live, .break: return 10_000
        case .scheduled, .postponed: return 60_000
        case .completed, .abandoned: return 300_000
        }
    }

    // MARK: Scoreboard cache

    /// The fresh scoreboard (fetching it when the cached one is stale), or the upstream's answer
    /// to pass on.
    private func currentBoard() async throws -> BoardOutcome {
        if let board, uptime() - board.fetchedAt < freshness(board.maxAge) {
            return .board(board)
        }
        if let refreshing {
            return try await refreshing.value
        }
        let task = Task { try await self.refreshBoard() }
        refreshing = task
        defer { refreshing = nil }
        return try await task.value
    }

    private func refreshBoard() async throws -> BoardOutcome {
        var request = FeedRequest(path: "\(league.apiPrefix)/scoreboard")
        if let board {
            request.headers["if-none-match"] = board.etag
            request.headers["if-modified-since"] = board.lastModified
        }
        let answer = try await upstream.fetch(request)
        let now = uptime()
        let maxAge = Self.maxAge(answer.headers["cache-control"])
        if answer.status == 304, var board {
            board.fetchedAt = now
            board.maxAge = maxAge ?? board.maxAge
            self.board = board
            return .board(board)
        }
        guard answer.status == 200 else {
            guard answer.status != 304 else {
                // Only a confused upstream answers 304 to a request without validators.
                return .answer(
                    NativeFeedBody.error(
                        status: 502, code: "bad_upstream_body", message: "ESPN \(league) scoreboard: 304 to an unconditional request"))
            }
            return .answer(answer)
        }
        let events: [ESPNConvertedEvent]
        do {
            events = try ESPNEventConverter.events(fromScoreboard: answer.body ?? Data(), league: league)
        } catch {
            return .answer(
                NativeFeedBody.error(status: 502, code: "bad_upstream_body", message: "ESPN \(league) scoreboard: \(error)"))
        }
        var byId: [String: ESPNConvertedEvent] = [:]
        for event in events {
            if let id = event.eventId, byId[id] == nil { byId[id] = event }
        }
        let fresh = Board(
            fetchedAt: now, generatedAt: Date(timeIntervalSince1970: wallClock().timeIntervalSince1970.rounded(.down)),
            events: events, byId: byId, maxAge: maxAge, etag: answer.headers["etag"],
            lastModified: answer.headers["last-modified"])
        board = fresh
        return .board(fresh)
    }

    private func freshness(_ maxAge: Int?) -> Duration {
        maxAge.map { .seconds($0) } ?? Self.defaultFreshness
    }

    // MARK: Summary cache

    /// The summary of `eventId`, nil when it failed (the match then goes on from the scoreboard).
    private func summary(_ eventId: String, final: Bool) async throws -> ESPNSummaryBody? {
        if let entry = summaries[eventId], entry.final || uptime() - entry.fetchedAt < freshness(board?.maxAge) {
            return entry.body
        }
        if let running = summaryFetches[eventId] {
            let body = await running.value
            try Task.checkCancellation()
            return body
        }
        let (upstream, request) = (upstream, FeedRequest(path: summaryPath(eventId)))
        let fetch = Task { () -> ESPNSummaryBody? in
            guard let answer = try? await upstream.fetch(request), answer.status == 200,
                  let parsed = try? ESPNEventConverter.summaryBody(answer.body ?? Data()), parsed.header.id == eventId
            else { return nil }
            return parsed
        }
        summaryFetches[eventId] = fetch
        let body = await withTaskCancellationHandler { await fetch.value } onCancel: { fetch.cancel() }
        summaryFetches[eventId] = nil
        // A cancelled request answered nothing about the match: not remembered as failed.
        if fetch.isCancelled { throw CancellationError() }
        summaries[eventId] = SummaryEntry(fetchedAt: uptime(), body: body, final: final && body != nil)
        pruneSummaries()
        return body
    }

    /// Drops expired summaries, and the oldest final ones beyond `finalSummaryLimit`.
    private func pruneSummaries() {
        let now = uptime()
        let window = freshness(board?.maxAge)
        summaries = summaries.filter { $0.value.final || now - $0.value.fetchedAt < window }
        let finals = summaries.filter(\.value.final).sorted { $0.value.fetchedAt < $1.value.fetchedAt }
        for (id, _) in finals.dropLast(Self.finalSummaryLimit) {
            summaries[id] = nil
        }
    }

    private func summaryPath(_ eventId: String) -> String {
        "\(league.apiPrefix)/summary?event=\(eventId)"
    }

    // MARK: Helpers

    /// `max-age` of a `cache-control` value, clamped to 2…300 seconds.
    static func maxAge(_ cacheControl: String?) -> Int? {
        guard let cacheControl else { return nil }
        for directive in cacheControl.split(separator: ",") {
            let parts = directive.trimmingCharacters(in: .whitespaces).split(separator: "=", maxSplits: 1)
            guard parts.count == 2, parts[0].lowercased() == "max-age",
                let seconds = Int(parts[1].trimmingCharacters(in: CharacterSet(charactersIn: "\" ")))
            else { continue }
            return min(max(seconds, 2), 300)
        }
        return nil
    }

    /// A 200 with an `ETag` of its bytes, or a 304 when the client already holds them.
    static func conditional(_ request: FeedRequest, body: some Encodable) -> FeedResponse {
        let response = NativeFeedBody.response(status: 200, encoding: body)
        guard response.status == 200, let bytes = response.body else { return response }
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in bytes {
            hash ^= UInt64(byte)
            hash = hash &* 0x100_0000_01b3
        }
        let hex = String(hash, radix: 16)
        let etag = "\"e" + String(repeating: "0", count: 16 - hex.count) + hex + "\""
        if let held = request.headers["if-none-match"],
            held.split(separator: ",").contains(where: { candidate in
                var tag = candidate.trimmingCharacters(in: .whitespaces)
                if tag.hasPrefix("W/") { tag.removeFirst(2) }
                return tag == "*" || tag == etag
            })
        {
            return FeedResponse(status: 304, headers: ["etag": etag])
        }
        var answer = response
        answer.headers["etag"] = etag
        return answer
    }

    static func isEventId(_ text: String) -> Bool {
        !text.isEmpty && text.utf8.count <= 40
            && text.utf8.allSatisfy { ($0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9")) }
    }
}
