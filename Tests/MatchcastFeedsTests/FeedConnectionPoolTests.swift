import AsyncHTTPClient
import Foundation
@testable import MatchcastFeeds
import MatchcastTesting
import NIOCore
import NIOHTTP1
import NIOPosix
import Synchronization
import Testing

/// `FeedConnectionPool` and the `http` path of `HTTPFeedTransport` against a plain NIO HTTP/1.1 server that counts
/// the connections it accepts and answers each request as the test says: keep-alive reuse, the bound on connections,
/// connections the server drops, deadlines, cancellation, idle connections closed, redirects followed.
@Suite("feed connection pool: keep-alive HTTP/1.1 per event loop")
struct FeedConnectionPoolTests {
    /// A pool of its own on a loop of its own, and the server; both shut down after `body`.
    private static func withPool(
        maxConnections: Int = 8, idleLimit: TimeAmount = .seconds(60), sweepInterval: TimeAmount = .milliseconds(50),
        _ answer: @escaping @Sendable (ScriptedHTTPServer.Request) -> ScriptedHTTPServer.Action,
        _ body: (_ pool: FeedConnectionPool, _ loop: any EventLoop, _ server: ScriptedHTTPServer) async throws -> Void
    ) async throws {
        let server = try await ScriptedHTTPServer.start(answer)
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let pool = FeedConnectionPool(
            host: "127.0.0.1", port: server.port, maxConnectionsPerLoop: maxConnections, idleLimit: idleLimit,
            sweepInterval: sweepInterval)
        do {
            try await body(pool, group.next(), server)
        } catch {
            await server.stop()
            try await group.shutdownGracefully()
            throw error
        }
        await server.stop()
        try await group.shutdownGracefully()
    }

    /// One GET of `path` through `pool` on `loop`, with `timeout`.
    private static func get(
        _ path: String, _ pool: FeedConnectionPool, on loop: any EventLoop, timeout: TimeAmount = .seconds(10)
    ) async throws -> FeedResponse {
        var headers = HTTPHeaders()
        headers.add(name: "host", value: "127.0.0.1")
        let fetch = FeedFetch(
            head: HTTPRequestHead(version: .http1_1, method: .GET, uri: path, headers: headers), limit: 1 << 20,
            path: path, deadline: .now() + timeout)
        let connections = pool.connections(on: loop)
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                loop.execute {
                    if fetch.begin({ continuation.resume(with: $0) }) { connections.start(fetch) }
                }
            }
        } onCancel: {
            loop.execute { connections.cancel(fetch, with: CancellationError()) }
        }
    }

    @Test("requests one after another share one connection, and each gets its own answer")
    func sequentialRequestsReuseOneConnection() async throws {
        try await Self.withPool({ .answer(body: "you asked for \($0.uri)") }) { pool, loop, server in
            for index in 0..<20 {
                let answer = try await Self.get("/matches/\(index)", pool, on: loop)
                #expect(answer.status == 200)
                #expect(answer.body.map { String(decoding: $0, as: UTF8.self) } == "you asked for /matches/\(index)")
                #expect(answer.headers["content-length"] != nil, "header names are lower-cased: \(answer.headers)")
            }
            #expect(server.connections == 1)
            let open = try await pool.openConnections()
            #expect(open == 1)
        }
    }

    @Test("many requests at once open no more connections than the bound, and all are answered")
    func concurrentRequestsStayWithinTheBound() async throws {
        try await Self.withPool(maxConnections: 3, { request in .answer(body: request.uri, delay: .milliseconds(20)) }) {
            pool, loop, server in
            let answers = try await withThrowingTaskGroup(of: String.self) { group in
                for index in 0..<30 {
                    group.addTask {
                        let answer = try await Self.get("/m/\(index)", pool, on: loop)
                        return answer.body.map { String(decoding: $0, as: UTF8.self) } ?? ""
                    }
                }
                return try await group.reduce(into: Set<String>()) { $0.insert($1) }
            }
            #expect(answers == Set((0..<30).map { "/m/\($0)" }))
            #expect((1...3).contains(server.connections), "30 requests at once, three connections at most")
            #expect(server.mostAtOnce <= 3)
        }
    }

    @Test("a connection the server closed after answering: every later request is answered, none sent twice")
    func aClosedIdleConnectionIsNotUsed() async throws {
        // The server answers as if the connection stays open, then closes it.
        try await Self.withPool({ _ in .answer(body: "ok", thenClose: true) }) { pool, loop, server in
            for _ in 0..<10 {
                let answer = try await Self.get("/x", pool, on: loop)
                #expect(answer.status == 200)
                let closed = try await eventually(within: 10, every: .milliseconds(5)) { server.open == 0 }
                #expect(closed)
            }
            #expect(server.connections == 10)
            #expect(server.requests == 10, "no request was sent twice")
        }
    }

    @Test("a reused connection closed under a request before any answer: the request goes once more on a new one")
    func aRequestOnAStaleConnectionIsSentAgain() async throws {
        // Each connection answers its first request and drops at its second, as a server that closed it as idle
        // while the request was on its way.
        try await Self.withPool({ $0.numberOnConnection == 1 ? .answer(body: "ok") : .drop }) { pool, loop, server in
            for _ in 0..<10 {
                let answer = try await Self.get("/x", pool, on: loop)
                #expect(answer.status == 200)
            }
            #expect(server.connections == 10)
            #expect(server.requests == 19, "each request after the first: dropped once, then answered")
        }
    }

    @Test("a new connection closed before any answer fails the request: it is not sent again")
    func aFreshConnectionClosedIsAnError() async throws {
        try await Self.withPool({ _ in .drop }) { pool, loop, server in
            await #expect(throws: FeedConnection.ClosedBeforeAnswer.self) { _ = try await Self.get("/x", pool, on: loop) }
            #expect(server.requests == 1)
        }
    }

    @Test("an answer that says connection: close closes the connection; the next request opens another")
    func connectionCloseIsHonoured() async throws {
        try await Self.withPool({ _ in .answer(body: "ok", headers: [("connection", "close")]) }) { pool, loop, server in
            for _ in 0..<5 {
                let answer = try await Self.get("/x", pool, on: loop)
                #expect(answer.status == 200)
            }
            #expect(server.connections == 5)
            #expect(server.requests == 5)
        }
    }

    @Test("a request waiting behind a hung one times out at its deadline; the hung one too")
    func deadlinesCoverTheWaitForAConnection() async throws {
        try await Self.withPool(maxConnections: 1, { _ in .hang }) { pool, loop, _ in
            let begin = ContinuousClock.now
            let first = Task { try await Self.get("/hangs", pool, on: loop, timeout: .milliseconds(300)) }
            let second = Task { try await Self.get("/waits", pool, on: loop, timeout: .milliseconds(300)) }
            await #expect(throws: FeedDeadlineExceeded.self) { _ = try await first.value }
            await #expect(throws: FeedDeadlineExceeded.self) { _ = try await second.value }
            // The host never answers: any end proves the deadlines; the margin is for a loaded machine.
            #expect(begin.duration(to: .now) < .seconds(15))
        }
    }

    @Test("a request handed a connection as the one before it ends still times out at its deadline",
          .timeLimit(.minutes(1)))
    func aRequestHandedOnKeepsItsDeadline() async throws {
        // One connection: the second request waits for the first's answer, gets its connection, and never gets one.
        try await Self.withPool(maxConnections: 1, { request in
            request.uri == "/first" ? .answer(body: "ok", delay: .milliseconds(100)) : .hang
        }) { pool, loop, server in
            let first = Task { try await Self.get("/first", pool, on: loop) }
            try await #require(eventually(within: 10, every: .milliseconds(5)) { server.requests == 1 })
            let second = Task { try await Self.get("/second", pool, on: loop, timeout: .milliseconds(500)) }
            #expect(try await first.value.status == 200)
            await #expect(throws: FeedDeadlineExceeded.self) { _ = try await second.value }
            #expect(server.connections == 1, "the second request went on the first's connection")
        }
    }

    @Test("a cancelled request ends at once and its connection closes")
    func cancellationEndsTheRequestAndClosesItsConnection() async throws {
        try await Self.withPool({ _ in .hang }) { pool, loop, server in
            let request = Task { try await Self.get("/hangs", pool, on: loop) }
            try await #require(eventually(within: 10, every: .milliseconds(10)) { server.requests == 1 })
            request.cancel()
            await #expect(throws: CancellationError.self) { _ = try await request.value }
            let closed = try await eventually(within: 10, every: .milliseconds(10)) { try await pool.openConnections() == 0 }
            #expect(closed)
        }
    }

    @Test("a connection idle longer than the limit is closed")
    func idleConnectionsAreClosed() async throws {
        try await Self.withPool(idleLimit: .milliseconds(200), { _ in .answer(body: "ok") }) { pool, loop, server in
            let answer = try await Self.get("/x", pool, on: loop)
            #expect(answer.status == 200)
            #expect(server.connections == 1)
            let closed = try await eventually(within: 10, every: .milliseconds(20)) { try await pool.openConnections() == 0 }
            #expect(closed, "the pool closed its idle connection")
            let serverSawIt = try await eventually(within: 10, every: .milliseconds(20)) { server.open == 0 }
            #expect(serverSawIt, "the server saw it close")
        }
    }

    @Test("a host that refuses connections fails the request at once with a transport error")
    func aRefusedConnectionFails() async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let pool = FeedConnectionPool(host: "127.0.0.1", port: 1)
        let begin = ContinuousClock.now
        await #expect(throws: (any Error).self) { _ = try await Self.get("/x", pool, on: group.next()) }
        #expect(begin.duration(to: .now) < .seconds(9), "failed at once, not at the 10 s deadline")
        try await group.shutdownGracefully()
    }

    @Test("through the transport: the base path, a redirect followed, and the request's own headers sent")
    func theTransportUsesThePoolAndFollowsRedirects() async throws {
        let seen = Mutex<[ScriptedHTTPServer.Request]>([])
        let server = try await ScriptedHTTPServer.start { request in
            seen.withLock { $0.append(request) }
            if request.uri == "/v1/matches/old" { return .answer(status: 302, body: "", headers: [("location", "/v1/matches/new")]) }
            return .answer(body: "at \(request.uri)")
        }
        let client = HTTPClient(eventLoopGroupProvider: .singleton)
        // Both are shut down whether the checks throw or not.
        var failure: (any Error)?
        do {
            let transport = try HTTPFeedTransport(client: client, baseURL: "http://127.0.0.1:\(server.port)/v1/")
            let answer = try await transport.fetch(FeedRequest(path: "/matches/m1", headers: ["if-none-match": "\"v1\""]))
            #expect(answer.body.map { String(decoding: $0, as: UTF8.self) } == "at /v1/matches/m1")
            let first = try #require(seen.withLock { $0.first })
            #expect(first.headers["if-none-match"] == "\"v1\"")
            #expect(first.headers["host"] == "127.0.0.1:\(server.port)")
            #expect(first.headers["user-agent"] == "matchcast")
            let moved = try await transport.fetch(.match("old"))
            #expect(moved.status == 200)
            #expect(moved.body.map { String(decoding: $0, as: UTF8.self) } == "at /v1/matches/new")
        } catch {
            failure = error
        }
        try await client.shutdown()
        await server.stop()
        if let failure { throw failure }
    }
}

/// A plain HTTP/1.1 server on a free loopback port, answering each request with what `answer` says, and counting
/// the connections it accepted, those open, and the requests it got.
final class ScriptedHTTPServer: Sendable {
    struct Request: Sendable {
        let uri: String
        /// 1 for a connection's first request.
        let numberOnConnection: Int
        /// Lower-cased names.
        let headers: [String: String]
    }

    enum Action: Sendable {
        /// Answers (after `delay`); with `thenClose`, closes the connection after the answer without saying so.
        case answer(status: Int = 200, body: String, headers: [(String, String)] = [], delay: Duration = .zero,
                    thenClose: Bool = false)
        /// Never answers.
        case hang
        /// Closes the connection without answering.
        case drop
    }

    fileprivate struct Counts {
        var connections = 0
        var open = 0
        var requests = 0
        var inFlight = 0
        var mostAtOnce = 0
    }

    let port: Int
    private let channel: any Channel
    private let counts = Mutex(Counts())

    private init(port: Int, channel: any Channel) {
        self.port = port
        self.channel = channel
    }

    var connections: Int { counts.withLock { $0.connections } }
    var open: Int { counts.withLock { $0.open } }
    var requests: Int { counts.withLock { $0.requests } }
    var mostAtOnce: Int { counts.withLock { $0.mostAtOnce } }

    static func start(_ answer: @escaping @Sendable (Request) -> Action) async throws -> ScriptedHTTPServer {
        let shared = Shared()
        let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                shared.accepted()
                channel.closeFuture.whenComplete { _ in shared.closed() }
                return channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.configureHTTPServerPipeline()
                    try channel.pipeline.syncOperations.addHandler(Handler(answer: answer, shared: shared))
                }
            }
            .bind(host: "127.0.0.1", port: 0).get()
        let server = ScriptedHTTPServer(port: channel.localAddress?.port ?? 0, channel: channel)
        shared.server.withLock { $0 = server }
        return server
    }

    func stop() async {
        try? await channel.close()
    }

    fileprivate func update(_ change: (inout Counts) -> Void) {
        counts.withLock { change(&$0) }
    }

    /// What the connections' handlers reach the server by (they are made before it exists).
    private final class Shared: Sendable {
        let server = Mutex<ScriptedHTTPServer?>(nil)
        func accepted() { server.withLock { $0 }?.update { $0.connections += 1; $0.open += 1 } }
        func closed() { server.withLock { $0 }?.update { $0.open -= 1 } }
        func began() {
            server.withLock { $0 }?.update {
                $0.requests += 1
                $0.inFlight += 1
                $0.mostAtOnce = max($0.mostAtOnce, $0.inFlight)
            }
        }
        func ended() { server.withLock { $0 }?.update { $0.inFlight -= 1 } }
    }

    private final class Handler: ChannelInboundHandler, @unchecked Sendable {
        typealias InboundIn = HTTPServerRequestPart
        typealias OutboundOut = HTTPServerResponsePart

        let answer: @Sendable (Request) -> Action
        let shared: Shared
        private var head: HTTPRequestHead?
        private var served = 0

        init(answer: @escaping @Sendable (Request) -> Action, shared: Shared) {
            self.answer = answer
            self.shared = shared
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            switch unwrapInboundIn(data) {
            case .head(let head): self.head = head
            case .body: break
            case .end:
                guard let head else { return }
                shared.began()
                var headers: [String: String] = [:]
                for (name, value) in head.headers { headers[name.lowercased()] = value }
                served += 1
                let action = answer(Request(uri: head.uri, numberOnConnection: served, headers: headers))
                if case .drop = action {
                    shared.ended()
                    context.close(promise: nil)
                    return
                }
                guard case .answer(let status, let body, let extra, let delay, let thenClose) = action else { return }
                let respond: @Sendable () -> Void = { [self, context = NIOLoopBound(context, eventLoop: context.eventLoop)] in
                    let context = context.value
                    var fields = HTTPHeaders([("content-length", "\(body.utf8.count)")])
                    for (name, value) in extra { fields.add(name: name, value: value) }
                    context.write(wrapOutboundOut(.head(HTTPResponseHead(
                        version: .http1_1, status: HTTPResponseStatus(statusCode: status), headers: fields))), promise: nil)
                    context.write(wrapOutboundOut(.body(.byteBuffer(ByteBuffer(string: body)))), promise: nil)
                    let channel = context.channel
                    context.writeAndFlush(wrapOutboundOut(.end(nil))).whenComplete { _ in
                        self.shared.ended()
                        if thenClose { channel.close(promise: nil) }
                    }
                }
                if delay == .zero {
                    respond()
                } else {
                    context.eventLoop.scheduleTask(in: TimeAmount(delay)) { respond() }
                }
            }
        }
    }
}
