import Foundation
import MatchcastCore

extension FakeFeed {
    /// What the feed answers to `request`, `elapsed` real time after it started
    /// (simulated time is `elapsed × speed`). See the type's documentation for the routes.
    public func response(to request: FeedRequest, elapsed: Duration) -> FeedResponse {
        let now = simulatedSeconds(elapsed: elapsed)
        let path = request.resource
        if path == "/live-matches" {
            return liveMatches(at: now, request: request)
        }
        if path.hasPrefix("/matches/") {
            let raw = String(path.dropFirst("/matches/".count))
            return match(raw.removingPercentEncoding ?? raw, at: now, request: request)
        }
        if path == "/schedule" {
            return schedule(date: request.queryValue("date"), at: now, request: request)
        }
        return NativeFeedBody.error(status: 404, code: "not_found", message: "no resource at \(path)")
    }

    /// The simulated `retryAfterMs` a backend would ask for while a match is in `status`.
    static func simulatedRetryAfterMs(for status: MatchStatus) -> Int {
        switch status {
        case .live: 5_000
        case .break: 30_000
        case .scheduled, .postponed: 60_000
        case .completed, .abandoned: 300_000
        }
    }

    /// Simulated milliseconds as real milliseconds at this feed's speed, at least 1.
    func realMilliseconds(_ simulated: Int) -> Int {
        max(1, Int((Double(simulated) / speed).rounded()))
    }

    private func liveMatches(at now: Double, request: FeedRequest) -> FeedResponse {
        let listed = timelines.compactMap { timeline -> MatchSnapshot? in
            let snapshot = timeline.snapshot(at: now)
            if snapshot.status.isInProgress { return snapshot }
            if let finished = timeline.finishedAt, finished <= now, now - finished <= Self.recentlyFinishedWindow {
                return snapshot
            }
            return nil
        }
        // The list is polled as often as its most urgent match needs.
        let simulated = listed.map { Self.simulatedRetryAfterMs(for: $0.status) }.min()
            ?? Self.simulatedRetryAfterMs(for: .scheduled)
        let body = NativeFeedBody.LiveMatches(
            retryAfterMs: realMilliseconds(simulated), generatedAt: Self.date(atSimulated: now.rounded(.down)),
            matches: listed)
        return Self.conditional(request, etag: Self.listTag(listed)) { headers in
            NativeFeedBody.response(status: 200, headers: headers, encoding: body)
        }
    }

    private func match(_ id: String, at now: Double, request: FeedRequest) -> FeedResponse {
        guard let timeline = timeline(id) else {
            return NativeFeedBody.error(status: 404, code: "not_found", message: "no match '\(id)'")
        }
        let snapshot = timeline.snapshot(at: now)
        let body = NativeFeedBody.Match(
            retryAfterMs: realMilliseconds(Self.simulatedRetryAfterMs(for: snapshot.status)), match: snapshot)
        return Self.conditional(request, etag: "\"v\(snapshot.seq ?? 0)\"") { headers in
            NativeFeedBody.response(status: 200, headers: headers, encoding: body)
        }
    }

    private func schedule(date: String?, at now: Double, request: FeedRequest) -> FeedResponse {
        guard let date, FeedRequest.isCalendarDate(date) else {
            return NativeFeedBody.error(status: 400, code: "bad_request", message: "date must be YYYY-MM-DD")
        }
        let matches = timelines.map { $0.snapshot(at: now) }.filter { snapshot in
            snapshot.startsAt.map { JSON.formatDate($0).hasPrefix(date) } ?? false
        }
        let body = NativeFeedBody.Schedule(date: date, matches: matches)
        return Self.conditional(request, etag: Self.listTag(matches)) { headers in
            NativeFeedBody.response(status: 200, headers: headers, encoding: body)
        }
    }

    /// A 304 without a body when the client already holds `etag`, else the full answer carrying it.
    private static func conditional(
        _ request: FeedRequest, etag: String, answer: ([String: String]) -> FeedResponse
    ) -> FeedResponse {
        let headers = ["etag": etag]
        if let held = request.headers["if-none-match"], matches(held, etag: etag) {
            return FeedResponse(status: 304, headers: headers)
        }
        return answer(headers)
    }

    /// RFC 9110 weak comparison against a list of tags or `*`.
    private static func matches(_ ifNoneMatch: String, etag: String) -> Bool {
        ifNoneMatch.split(separator: ",").contains { candidate in
            var tag = candidate.trimmingCharacters(in: .whitespaces)
            if tag.hasPrefix("W/") { tag.removeFirst(2) }
            return tag == "*" || tag == etag
        }
    }

    /// A tag for a list that changes whenever a match joins, leaves or moves on.
    private static func listTag(_ snapshots: [MatchSnapshot]) -> String {
        let key = snapshots.map { "\($0.id):\($0.seq ?? 0)" }.joined(separator: ";")
        let hex = String(fnv1a64(key), radix: 16)
        return "\"l" + String(repeating: "0", count: 16 - hex.count) + hex + "\""
    }
}
