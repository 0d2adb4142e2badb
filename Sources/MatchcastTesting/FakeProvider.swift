import Foundation
import Hummingbird
import MatchcastCore
import MatchcastFeeds
import NIOCore
import Synchronization

/// A score provider on a loopback port for the failover tests and benchmarks: native v1 lists, schedules and match answers of its
/// own ids and team names, and a mode that makes it fail the way real providers do.
public final class FakeProvider: Sendable {
    public enum Mode: Sendable {
        /// Answers with the true score.
        case ok
        /// 500 to everything.
        case failing
        /// Never answers.
        case hanging
        /// Keeps answering the score it had when it froze.
        case frozen
        /// Takes every goal back: answers 0-0.
        case backwards
    }

    public struct Game: Sendable {
        public var id: String
        public var home: String
        public var away: String
        public var startsAt: Date
        var score = (home: 0, away: 0)
        var frozen: (home: Int, away: Int)?

        public init(id: String, home: String, away: String, startsAt: Date) {
            (self.id, self.home, self.away, self.startsAt) = (id, home, away, startsAt)
        }
    }

    private struct State {
        var mode = Mode.ok
        var games: [Game]
        public var paths: [String] = []
    }

    private let state: Mutex<State>
    public let intervalMs: Int
    private(set) nonisolated(unsafe) var server: LocalHTTPServer!

    private init(games: [Game], intervalMs: Int) {
        state = Mutex(State(games: games))
        self.intervalMs = intervalMs
    }

    public static func start(games: [Game], intervalMs: Int) async throws -> FakeProvider {
        let provider = FakeProvider(games: games, intervalMs: intervalMs)
        let router = Router()
        router.get("/live-matches") { _, _ in provider.answer(path: "/live-matches") }
        router.get("/schedule") { request, _ in provider.answer(path: "/schedule", date: request.uri.queryParameters.get("date")) }
        router.get("/matches/:id") { request, context in
            let id = context.parameters.get("id") ?? ""
            if provider.mode == .hanging {
                provider.record("/matches/\(id)")
                try await Task.sleep(for: .seconds(30))
            }
            return provider.answer(path: "/matches/\(id)", id: id)
        }
        provider.server = try await LocalHTTPServer.start(name: "fake provider", stopTimeout: .seconds(1)) { onRunning in
            Application(router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0)), onServerRunning: onRunning)
        }
        return provider
    }

    public var baseURL: String { "http://127.0.0.1:\(server.port)" }
    public var mode: Mode { state.withLock { $0.mode } }
    public var paths: [String] { state.withLock { $0.paths } }
    public var matchRequests: Int { paths.filter { $0.hasPrefix("/matches/") }.count }

    public func set(_ mode: Mode) {
        state.withLock { state in
            state.mode = mode
            for index in state.games.indices { state.games[index].frozen = mode == .frozen ? state.games[index].score : nil }
        }
    }

    /// The true score of game `id` (as every provider in `ok` mode answers it).
    public func score(_ id: String, home: Int, away: Int) {
        state.withLock { state in
            for index in state.games.indices where state.games[index].id == id { state.games[index].score = (home, away) }
        }
    }

    public func stop() async { await server.stop() }

    private func record(_ path: String) { state.withLock { $0.paths.append(path) } }

    private func answer(path: String, id: String? = nil, date: String? = nil) -> Response {
        let (mode, games) = state.withLock { state in
            if state.mode != Mode.hanging || id == nil { state.paths.append(path) }
            return (state.mode, state.games)
        }
        if mode == .failing { return Response(status: .internalServerError) }
        let snapshots = games.map { snapshot(of: $0, mode: mode) }
        let body: Data
        do {
            if let id {
                guard let match = snapshots.first(where: { $0.id == id }) else { return Response(status: .notFound) }
                body = try JSON.encoder().encode(NativeFeedBody.Match(retryAfterMs: intervalMs, match: match))
            } else if let date {
                body = try JSON.encoder().encode(NativeFeedBody.Schedule(date: date, matches: snapshots))
            } else {
                body = try JSON.encoder().encode(NativeFeedBody.LiveMatches(retryAfterMs: intervalMs, generatedAt: Date(), matches: snapshots))
            }
        } catch {
            return Response(status: .internalServerError)
        }
        return Response(status: .ok, headers: [.contentType: "application/json"], body: .init(byteBuffer: ByteBuffer(bytes: body)))
    }

    private func snapshot(of game: Game, mode: Mode) -> MatchSnapshot {
        var (home, away) = game.frozen ?? game.score
        if mode == .backwards { (home, away) = (0, 0) }
        return MatchSnapshot(
            id: game.id, sport: .football, status: .live, startsAt: game.startsAt, competition: "Premier League",
            home: Team(id: "h-" + game.id, name: game.home), away: Team(id: "a-" + game.id, name: game.away),
            score: .teamTotals(TeamScore(home: home, away: away, period: "2H", clock: "60'")))
    }
}
