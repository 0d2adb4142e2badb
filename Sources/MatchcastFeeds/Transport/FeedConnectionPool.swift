import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import Synchronization

/// Keep-alive HTTP/1.1 connections to one plain-HTTP feed host, kept apart per event loop: a poll running on a loop
/// (`EventLoopExecutor`) gets a connection of that loop, sends on it and is answered there, with no lock, no hop to
/// another thread and no future per step. `HTTPFeedTransport` uses it for `http` feeds.
///
/// Each loop opens at most `maxConnectionsPerLoop` connections to the host (32: 64 on two loops, what serve's
/// `HTTPClient` allows a host); a request that finds them all busy waits for one in order. A request's deadline
/// covers the whole exchange (waiting for a connection, connecting, the answer to its last byte); a loop's deadlines
/// are kept by one repeating check of its busy connections and waiting requests (`sweepInterval`, so a request times
/// out up to that late), which also closes connections idle for `idleLimit`.
/// A request whose reused connection turns out to have been closed by the server before any answer (an idle
/// connection the server dropped) goes once more on a connection of its own: a feed request is a GET. Connections
/// outlive the pool until they have been idle for `idleLimit` (a transport is made once per feed and kept).
final class FeedConnectionPool: Sendable {
    let host: String
    let port: Int
    let maxConnectionsPerLoop: Int
    let idleLimit: TimeAmount
    let sweepInterval: TimeAmount
    private let loops = Mutex<[ObjectIdentifier: LoopConnections]>([:])

    init(host: String, port: Int, maxConnectionsPerLoop: Int = 32, idleLimit: TimeAmount = .seconds(60),
         sweepInterval: TimeAmount = .milliseconds(250)) {
        self.host = host
        self.port = port
        self.maxConnectionsPerLoop = maxConnectionsPerLoop
        self.idleLimit = idleLimit
        self.sweepInterval = sweepInterval
    }

    /// The connections of `loop`, made on first use.
    func connections(on loop: any EventLoop) -> LoopConnections {
        loops.withLock { loops in
            if let known = loops[ObjectIdentifier(loop)] { return known }
            let made = LoopConnections(
                loop: loop, host: host, port: port, maxConnections: maxConnectionsPerLoop, idleLimit: idleLimit,
                sweepInterval: sweepInterval)
            loops[ObjectIdentifier(loop)] = made
            return made
        }
    }

    /// Open connections on every loop (for tests). Called off the loops.
    func openConnections() async throws -> Int {
        var total = 0
        for connections in loops.withLock({ Array($0.values) }) {
            total += try await connections.loop.submit { connections.open }.get()
        }
        return total
    }
}

/// A plain-`http` feed's requests over its own `FeedConnectionPool` (`HTTPFeedTransport`).
final class PlainHTTPFeed: Sendable {
    let pool: FeedConnectionPool
    /// The base URL's path, percent-encoded, without a trailing slash.
    let basePath: String
    /// What every request carries: host, accept, user agent.
    private let baseHeaders: HTTPHeaders

    init(pool: FeedConnectionPool, basePath: String, hostHeader: String, userAgent: String) {
        self.pool = pool
        self.basePath = basePath
        var headers = HTTPHeaders()
        headers.add(name: "host", value: hostHeader)
        headers.add(name: "accept", value: "application/json")
        headers.add(name: "user-agent", value: userAgent)
        self.baseHeaders = headers
    }

    /// `request` on a connection of the loop the caller runs on (one of `group`'s when it runs on none).
    func fetch(_ request: FeedRequest, limit: Int, timeout: Duration, group: any EventLoopGroup) async throws
        -> FeedResponse
    {
        var headers = baseHeaders
        for (name, value) in request.headers {
            headers.replaceOrAdd(name: name, value: value)
        }
        let head = HTTPRequestHead(version: .http1_1, method: .GET, uri: basePath + request.path, headers: headers)
        let loop = MultiThreadedEventLoopGroup.currentEventLoop ?? group.any()
        let connections = pool.connections(on: loop)
        let fetch = FeedFetch(head: head, limit: limit, path: request.path, deadline: .now() + TimeAmount(timeout))
        do {
            return try await withTaskCancellationHandler {
                try await withUnsafeThrowingContinuation { (continuation: UnsafeContinuation<FeedResponse, any Error>) in
                    let start: @Sendable () -> Void = {
                        if fetch.begin({ continuation.resume(with: $0) }) { connections.start(fetch) }
                    }
                    if loop.inEventLoop { start() } else { loop.execute(start) }
                }
            } onCancel: {
                loop.execute { connections.cancel(fetch, with: CancellationError()) }
            }
        } catch {
            if Task.isCancelled || error is CancellationError { throw CancellationError() }
            switch error {
            case let error as FeedError: throw error
            case is FeedDeadlineExceeded: throw FeedError.timeout(path: request.path)
            default: throw FeedError.transport(error, path: request.path)
            }
        }
    }
}

/// One request of `FeedConnectionPool`, from asking for a connection to its answer. Confined to its loop.
final class FeedFetch: @unchecked Sendable {
    let head: HTTPRequestHead
    let limit: Int
    let path: String
    let deadline: NIODeadline
    private var completion: ((Result<FeedResponse, any Error>) -> Void)?
    private(set) var isDone = false
    /// Sent once more after its reused connection closed before any answer.
    var retried = false
    /// The connection it is on, while it is.
    var connection: FeedConnection?

    init(head: HTTPRequestHead, limit: Int, path: String, deadline: NIODeadline) {
        (self.head, self.limit, self.path, self.deadline) = (head, limit, path, deadline)
    }

    /// Gives the request the completion its answer goes to; false (and `completion` called with a
    /// `CancellationError`) when it was cancelled before.
    func begin(_ completion: @escaping (Result<FeedResponse, any Error>) -> Void) -> Bool {
        guard !isDone else {
            completion(.failure(CancellationError()))
            return false
        }
        self.completion = completion
        return true
    }

    /// Ends the request with `result`; later calls do nothing.
    func finish(_ result: Result<FeedResponse, any Error>) {
        guard !isDone else { return }
        isDone = true
        let completion = self.completion
        self.completion = nil
        completion?(result)
    }
}

/// A request's time ran out.
struct FeedDeadlineExceeded: Error, CustomStringConvertible {
    var description: String { "the deadline passed" }
}

/// The connections of one `FeedConnectionPool` on one event loop. Confined to `loop`: every method runs there.
final class LoopConnections: @unchecked Sendable {
    let loop: any EventLoop
    private let host: String
    private let port: Int
    private let maxConnections: Int
    private let idleLimit: TimeAmount
    private let sweepInterval: TimeAmount
    /// Every open connection, busy or idle, by channel.
    private var all: [ObjectIdentifier: FeedConnection] = [:]
    /// Idle connections, the most recently used last.
    private var idle: [FeedConnection] = []
    /// Connections being made.
    private var connecting = 0
    /// Requests waiting for a connection, in order.
    private var waiting = CircularBuffer<FeedFetch>()
    private var sweep: RepeatedTask?

    init(loop: any EventLoop, host: String, port: Int, maxConnections: Int, idleLimit: TimeAmount,
         sweepInterval: TimeAmount) {
        (self.loop, self.host, self.port, self.maxConnections) = (loop, host, port, maxConnections)
        (self.idleLimit, self.sweepInterval) = (idleLimit, sweepInterval)
    }

    var open: Int { all.count }

    /// Sends `fetch` on an idle connection, a new one, or the first to come free.
    func start(_ fetch: FeedFetch) {
        loop.assertInEventLoop()
        guard !fetch.isDone else { return }
        startSweeping()
        while let connection = idle.popLast() {
            if connection.channel.isActive {
                send(fetch, on: connection)
                return
            }
        }
        if all.count + connecting < maxConnections {
            connect(for: fetch)
        } else {
            waiting.append(fetch)
        }
    }

    /// Ends `fetch` with `error` wherever it is: waiting, or on a connection (which closes).
    func cancel(_ fetch: FeedFetch, with error: any Error) {
        loop.assertInEventLoop()
        fetch.connection?.fail(error)
        if let index = waiting.firstIndex(where: { $0 === fetch }) { waiting.remove(at: index) }
        fetch.finish(.failure(error))
    }

    private func send(_ fetch: FeedFetch, on connection: FeedConnection) {
        let reused = connection.served > 0
        fetch.connection = connection
        connection.send(fetch.head, limit: fetch.limit, path: fetch.path, deadline: fetch.deadline) { [self] result in
            fetch.connection = nil
            if case .failure(let error) = result, reused, !fetch.retried, error is FeedConnection.ClosedBeforeAnswer,
                fetch.deadline > .now()
            {
                fetch.retried = true
                retry(fetch)
                return
            }
            fetch.finish(result)
        }
    }

    /// `fetch` again, on a connection of its own: the idle ones may have been dropped by the server too.
    private func retry(_ fetch: FeedFetch) {
        if all.count + connecting < maxConnections {
            connect(for: fetch)
        } else {
            waiting.prepend(fetch)
        }
    }

    private func connect(for fetch: FeedFetch) {
        connecting += 1
        let timeout = TimeAmount.nanoseconds(max(1, fetch.deadline.uptimeNanoseconds.subtractingReportingOverflow(
            NIODeadline.now().uptimeNanoseconds).partialValue.clampedToInt64))
        ClientBootstrap(group: loop)
            .connectTimeout(timeout)
            .channelOption(.socketOption(.tcp_nodelay), value: 1)
            .channelInitializer { [self] channel in
                do {
                    try channel.pipeline.syncOperations.addHTTPClientHandlers()
                    try channel.pipeline.syncOperations.addHandler(FeedConnection(channel: channel) { connection in
                        self.reusable(connection)
                    })
                    return channel.eventLoop.makeSucceededVoidFuture()
                } catch {
                    return channel.eventLoop.makeFailedFuture(error)
                }
            }
            .connect(host: host, port: port)
            .whenComplete { [self] result in
                connecting -= 1
                switch result {
                case .success(let channel):
                    guard let connection = try? channel.pipeline.syncOperations.handler(type: FeedConnection.self) else {
                        channel.close(promise: nil)
                        fetch.finish(.failure(FeedConnection.ClosedBeforeAnswer()))
                        return
                    }
                    all[ObjectIdentifier(channel)] = connection
                    channel.closeFuture.whenComplete { [self] _ in closed(connection) }
                    if fetch.isDone {
                        reusable(connection)
                    } else {
                        send(fetch, on: connection)
                    }
                case .failure(let error):
                    fetch.finish(.failure(fetch.deadline <= .now() ? FeedDeadlineExceeded() : error))
                    // Another waiting request may have a connection of its own.
                    if let next = nextWaiting() { connect(for: next) }
                }
            }
    }

    /// The connection can carry another request: the first waiting one's, or it waits idle. (One that closed
    /// meanwhile is left to `closed`, which hands its place to the next waiting request.)
    private func reusable(_ connection: FeedConnection) {
        guard connection.channel.isActive, all[ObjectIdentifier(connection.channel)] != nil else { return }
        if let next = nextWaiting() {
            send(next, on: connection)
        } else {
            idle.append(connection)
        }
    }

    private func nextWaiting() -> FeedFetch? {
        while let next = waiting.popFirst() {
            if !next.isDone { return next }
        }
        return nil
    }

    private func closed(_ connection: FeedConnection) {
        let key = ObjectIdentifier(connection.channel)
        all[key] = nil
        if let index = idle.firstIndex(where: { $0 === connection }) { idle.remove(at: index) }
        if let next = nextWaiting() { connect(for: next) }
    }

    private func startSweeping() {
        guard sweep == nil else { return }
        sweep = loop.scheduleRepeatedTask(initialDelay: sweepInterval, delay: sweepInterval) { [weak self] task in
            guard let self else {
                task.cancel()
                return
            }
            self.sweepOnce()
        }
    }

    /// Times out what is past its deadline, closes connections idle too long, and stops when nothing is left.
    private func sweepOnce() {
        let now = NIODeadline.now()
        for connection in all.values where connection.deadline.map({ $0 <= now }) ?? false {
            connection.fail(FeedDeadlineExceeded())
        }
        if waiting.contains(where: { $0.deadline <= now }) {
            let late = waiting.filter { $0.deadline <= now }
            waiting.removeAll { $0.deadline <= now }
            for fetch in late { fetch.finish(.failure(FeedDeadlineExceeded())) }
        }
        for connection in idle where now - connection.idleSince >= idleLimit {
            connection.channel.close(promise: nil)
        }
        if all.isEmpty, connecting == 0, waiting.isEmpty {
            sweep?.cancel()
            sweep = nil
        }
    }
}

extension UInt64 {
    fileprivate var clampedToInt64: Int64 { self > UInt64(Int64.max) ? Int64.max : Int64(self) }
}
