import Foundation
import Hummingbird
import Logging
import MatchcastCLI
import MatchcastCore
import MatchcastFeeds
import NIOCore
import Synchronization

/// The feed `bench serve` points the broker at: one football match in Matchcast's native v1 format
/// (`/live-matches`, `/matches/{id}`, `/schedule?date=`, as `FakeFeed` answers them), served on `127.0.0.1`
/// (a free port) in this process. The match stays as it is until the benchmark changes it (kick-off, a goal, or
/// any snapshot it shows);
/// each change is encoded once, under the lock, so what a poll reads is ready bytes. Every answer asks to be
/// polled again after `retryAfterMs`; `ETag`/`If-None-Match` give 304s as the fake feed does.
final class ControlledFeed: Sendable {
    let port: Int
    let matchId: String
    private let state: SharedState
    private let server: LocalServer
    private let counters: Counters

    private struct State: Sendable {
        var match: BenchMatch
        var snapshot: MatchSnapshot
        var matchBody = ByteBuffer()
        var listBody = ByteBuffer()
        var scheduleBody = ByteBuffer()
        var date = ""
        var etag = ""
    }

    private final class Counters: Sendable {
        let requests = Atomic<Int>(0)
    }

    private init(port: Int, matchId: String, state: SharedState, server: LocalServer, counters: Counters) {
        self.port = port
        self.matchId = matchId
        self.state = state
        self.server = server
        self.counters = counters
    }

    var baseURL: String { "http://127.0.0.1:\(port)" }

    /// Requests answered so far.
    var requests: Int { counters.requests.load(ordering: .relaxed) }

    /// Starts serving the match as scheduled (kick-off an hour from now).
    static func start(matchId: String, retryAfterMs: Int) async throws -> ControlledFeed {
        var match = BenchMatch(id: matchId)
        let now = Date()
        let scheduled = match.scheduled(at: now, startsAt: now.addingTimeInterval(3600))
        let state = SharedState(State(match: match, snapshot: scheduled))
        state.lock.withLock { Self.encode(&$0, retryAfterMs: retryAfterMs) }
        let counters = Counters()
        let responder = CallbackResponder<BasicRequestContext> { request, _ in
            counters.requests.add(1, ordering: .relaxed)
            guard request.method == .get else { return Response(status: .methodNotAllowed) }
            let path = request.uri.path
            let held = request.headers[.ifNoneMatch]
            let (body, etag): (ByteBuffer?, String) = state.lock.withLock { current in
                if path == "/live-matches" { return (current.listBody, "\"l\(current.snapshot.seq ?? 0)\"") }
                if path == "/matches/" + matchId { return (current.matchBody, current.etag) }
                if path == "/schedule" { return (current.scheduleBody, "\"s\(current.snapshot.seq ?? 0)\"") }
                return (nil, "")
            }
            guard let body else {
                return Response(
                    status: .notFound, headers: [.contentType: "application/json"],
                    body: ResponseBody(byteBuffer: ByteBuffer(string: #"{"error":{"code":"not_found","message":"no such resource"}}"#)))
            }
            if let held, held.split(separator: ",").contains(where: { $0.trimmingCharacters(in: .whitespaces) == etag }) {
                return Response(status: .notModified, headers: [.eTag: etag])
            }
            return Response(
                status: .ok, headers: [.contentType: "application/json", .eTag: etag], body: ResponseBody(byteBuffer: body))
        }
        let server = try await LocalServer.start(name: "feed", responder: responder)
        return ControlledFeed(port: server.port, matchId: matchId, state: state, server: server, counters: counters)
    }

    /// The match goes live; returns the `MonotonicTime` at which the new answer is served.
    func kickOff(retryAfterMs: Int) -> Int64 {
        change(retryAfterMs: retryAfterMs) { $0.kickOff(at: Date()) }
    }

    /// The next goal (a key event); returns the `MonotonicTime` at which the new answer is served.
    func goal(retryAfterMs: Int) -> Int64 {
        change(retryAfterMs: retryAfterMs) { $0.goal(at: Date()) }
    }

    /// Serves `snapshot` (its id must be `matchId`) from now on; returns the `MonotonicTime` at which it is served.
    func show(_ snapshot: MatchSnapshot, retryAfterMs: Int) -> Int64 {
        change(retryAfterMs: retryAfterMs) { _ in snapshot }
    }

    private func change(retryAfterMs: Int, _ step: (inout BenchMatch) -> MatchSnapshot) -> Int64 {
        state.lock.withLock { current in
            current.snapshot = step(&current.match)
            Self.encode(&current, retryAfterMs: retryAfterMs)
        }
        return MonotonicTime.now()
    }

    func stop() async {
        await server.stop()
    }

    // MARK: Bodies

    private static func encode(_ state: inout State, retryAfterMs: Int) {
        let encoder = JSON.encoder()
        let snapshot = state.snapshot
        let live = snapshot.status.isInProgress ? [snapshot] : []
        let date = String(JSON.formatDate(snapshot.startsAt ?? Date()).prefix(10))
        // Only a non-finite number could fail to encode; there is none here.
        let list = (try? encoder.encode(NativeFeedBody.LiveMatches(retryAfterMs: retryAfterMs, generatedAt: Date(), matches: live))) ?? Data()
        let match = (try? encoder.encode(NativeFeedBody.Match(retryAfterMs: retryAfterMs, match: snapshot))) ?? Data()
        let schedule = (try? encoder.encode(NativeFeedBody.Schedule(date: date, matches: [snapshot]))) ?? Data()
        state.listBody = ByteBuffer(bytes: list)
        state.matchBody = ByteBuffer(bytes: match)
        state.scheduleBody = ByteBuffer(bytes: schedule)
        state.date = date
        state.etag = "\"v\(snapshot.seq ?? 0)\""
    }

    /// The match and its encoded answers, shared by the feed and its responder.
    private final class SharedState: Sendable {
        let lock: Mutex<State>
        init(_ state: State) { lock = Mutex(state) }
    }
}
