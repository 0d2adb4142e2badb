import Foundation
import Hummingbird
import Logging
import MatchcastCLI
import MatchcastCore
import MatchcastFeeds
import NIOCore
import Synchronization

/// The feed `matchcast-bench polls` points serve at: M live football matches (`bench-poll-0` …) in Matchcast's native
/// v1 format, on `127.0.0.1` (a free port) in this process. Each match's answer is encoded once and never changes,
/// so every poll after the first is unchanged: a 304 to a request that carries the match's ETag, the same `seq`
/// otherwise. Every answer asks to be polled again after `retryAfterMs`. The live list is empty, so the matches are
/// polled one by one, as a feed whose list does not carry them has them polled.
///
/// Listed (`listed: true`): the live list carries every match whole (encoded once: a 304 to a request with its ETag),
/// for a serve whose list serves the matches it shows (`polling.liveListServesMatches`).
///
/// Changing (`changing: true`): from `startChanging()` on, every poll of a match is answered with the match a minute
/// later (the next `seq`, a new ETag), a routine change its followers are sent; listed, every answer of the list
/// carries each match a minute later. Before, as above.
final class PollsFeed: Sendable {
    let port: Int
    let matches: Int
    private let server: LocalServer
    private let counters: Counters
    private let changes: Changes?

    /// The changing matches: each one's state, and whether they change yet.
    final class Changes: Sendable {
        let matches: Mutex<[BenchMatch]>
        let on = Atomic<Bool>(false)
        let retryAfterMs: Int

        init(matches: [BenchMatch], retryAfterMs: Int) {
            self.matches = Mutex(matches)
            self.retryAfterMs = retryAfterMs
        }

        /// Every match a minute later, as the live list.
        func nextList() throws -> (ByteBuffer, etag: String) {
            let now = Date()
            let snapshots = matches.withLock { matches in matches.indices.map { matches[$0].minutePasses(at: now) } }
            let body = try JSON.encoder().encode(NativeFeedBody.LiveMatches(retryAfterMs: retryAfterMs, generatedAt: now, matches: snapshots))
            return (ByteBuffer(bytes: body), "\"list-\(snapshots.first?.seq ?? 0)\"")
        }

        /// The match at `index` a minute later, encoded.
        func next(_ index: Int) throws -> (ByteBuffer, etag: String) {
            let now = Date()
            let snapshot = matches.withLock { $0[index].minutePasses(at: now) }
            let body = try JSON.encoder().encode(NativeFeedBody.Match(retryAfterMs: retryAfterMs, match: snapshot))
            return (ByteBuffer(bytes: body), "\"p\(index)-\(snapshot.seq ?? 0)\"")
        }
    }

    final class Counters: Sendable {
        /// Requests for a match (`/matches/{id}`), all and answered 304.
        let matchPolls = Atomic<Int>(0)
        let notModified = Atomic<Int>(0)
        /// Anything else (`/live-matches`, `/schedule`, unknown paths).
        let other = Atomic<Int>(0)
    }

    /// What the feed has answered so far.
    struct Count: Sendable {
        var matchPolls: Int
        var notModified: Int
        var other: Int
    }

    private init(port: Int, matches: Int, server: LocalServer, counters: Counters, changes: Changes?) {
        self.port = port
        self.matches = matches
        self.server = server
        self.counters = counters
        self.changes = changes
    }

    /// From now on every poll of a changing feed is a change.
    func startChanging() {
        changes?.on.store(true, ordering: .relaxed)
    }

    var baseURL: String { "http://127.0.0.1:\(port)" }

    static func matchId(_ index: Int) -> String { "bench-poll-\(index)" }

    var count: Count {
        Count(
            matchPolls: counters.matchPolls.load(ordering: .relaxed), notModified: counters.notModified.load(ordering: .relaxed),
            other: counters.other.load(ordering: .relaxed))
    }

    static func start(matches: Int, retryAfterMs: Int, changing: Bool = false, listed: Bool = false) async throws -> PollsFeed {
        let now = Date()
        let encoder = JSON.encoder()
        var bodies: [ByteBuffer] = []
        var live: [BenchMatch] = []
        var kickedOff: [MatchSnapshot] = []
        bodies.reserveCapacity(matches)
        for index in 0..<matches {
            var match = BenchMatch(id: matchId(index))
            _ = match.scheduled(at: now, startsAt: now)
            let snapshot = match.kickOff(at: now)
            bodies.append(ByteBuffer(bytes: try encoder.encode(NativeFeedBody.Match(retryAfterMs: retryAfterMs, match: snapshot))))
            if changing { live.append(match) }
            if listed { kickedOff.append(snapshot) }
        }
        let changes = changing ? Changes(matches: live, retryAfterMs: retryAfterMs) : nil
        let list = ByteBuffer(bytes: try encoder.encode(NativeFeedBody.LiveMatches(retryAfterMs: retryAfterMs, generatedAt: now, matches: kickedOff)))
        let schedule = ByteBuffer(bytes: try encoder.encode(NativeFeedBody.Schedule(date: String(JSON.formatDate(now).prefix(10)), matches: [])))
        let table = bodies
        let counters = Counters()
        let prefix = "/matches/" + matchId(0).dropLast()
        let responder = CallbackResponder<BasicRequestContext> { request, _ in
            guard request.method == .get else { return Response(status: .methodNotAllowed) }
            let path = request.uri.path
            guard path.hasPrefix(prefix), let index = Int(path.dropFirst(prefix.count)), table.indices.contains(index) else {
                counters.other.add(1, ordering: .relaxed)
                if path == "/live-matches" {
                    if listed, let changes, changes.on.load(ordering: .relaxed) {
                        let (body, etag) = try changes.nextList()
                        return Self.json(body, etag: etag)
                    }
                    if request.headers[.ifNoneMatch] == "\"list\"" { return Response(status: .notModified, headers: [.eTag: "\"list\""]) }
                    return Self.json(list, etag: "\"list\"")
                }
                if path == "/schedule" { return Self.json(schedule, etag: "\"schedule\"") }
                return Response(
                    status: .notFound, headers: [.contentType: "application/json"],
                    body: ResponseBody(byteBuffer: ByteBuffer(string: #"{"error":{"code":"not_found","message":"no such match"}}"#)))
            }
            counters.matchPolls.add(1, ordering: .relaxed)
            if let changes, changes.on.load(ordering: .relaxed) {
                let (body, etag) = try changes.next(index)
                return Self.json(body, etag: etag)
            }
            let etag = "\"p\(index)\""
            if let held = request.headers[.ifNoneMatch],
               held.split(separator: ",").contains(where: { $0.trimmingCharacters(in: .whitespaces) == etag }) {
                counters.notModified.add(1, ordering: .relaxed)
                return Response(status: .notModified, headers: [.eTag: etag])
            }
            return Self.json(table[index], etag: etag)
        }
        let server = try await LocalServer.start(name: "feed", responder: responder)
        return PollsFeed(port: server.port, matches: matches, server: server, counters: counters, changes: changes)
    }

    func stop() async {
        await server.stop()
    }

    private static func json(_ body: ByteBuffer, etag: String) -> Response {
        Response(status: .ok, headers: [.contentType: "application/json", .eTag: etag], body: ResponseBody(byteBuffer: body))
    }
}
