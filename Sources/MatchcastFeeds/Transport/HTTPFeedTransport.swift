import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import Synchronization

/// `FeedTransport` over HTTP. A plain-`http` feed is polled over keep-alive connections of its own, kept per event
/// loop (`FeedConnectionPool`): a poll is a write and a read on a connection of the loop it runs on. An `https` feed,
/// and a request answered by a redirect, go through the shared `HTTPClient` (TLS, redirects followed), which the
/// caller owns and shuts down.
///
/// Every request has a deadline covering the whole exchange, body included, and a body limit: a
/// slow or huge answer becomes a `FeedError` (`timeout`, `too_large`), never a hang or a crash.
/// Header names in the returned `FeedResponse` are lower-cased; repeated headers are joined with ", ".
public struct HTTPFeedTransport: FeedTransport {
    /// The base URL without a trailing slash; request paths are appended to it.
    public let baseURL: String
    public let timeout: Duration
    public let maxBodyBytes: Int
    private let client: HTTPClient
    private let userAgent: String
    private let requests = RequestTemplates()
    /// For an `http` feed: its own connections.
    private let plain: PlainHTTPFeed?

    /// - Throws: `FeedError` (`config`) when `baseURL` is not an absolute http or https URL with a host.
    public init(
        client: HTTPClient,
        baseURL: String,
        timeout: Duration = .seconds(10),
        maxBodyBytes: Int = 4 * 1024 * 1024,
        userAgent: String = "matchcast"
    ) throws(FeedError) {
        guard let url = URL(string: baseURL), let scheme = url.scheme?.lowercased() else {
            throw .invalidConfiguration("feed base URL '\(baseURL.prefix(200))' is not a URL")
        }
        guard scheme == "http" || scheme == "https" else {
            throw .invalidConfiguration("feed base URL '\(baseURL.prefix(200))' must use http or https, not '\(scheme)'")
        }
        guard let host = url.host, !host.isEmpty else {
            throw .invalidConfiguration("feed base URL '\(baseURL.prefix(200))' has no host")
        }
        guard url.query == nil, url.fragment == nil else {
            throw .invalidConfiguration("feed base URL '\(baseURL.prefix(200))' must not have a query or fragment")
        }
        guard timeout > .zero, maxBodyBytes > 0 else {
            throw .invalidConfiguration("feed timeout and body limit must be positive")
        }
        var base = baseURL
        while base.hasSuffix("/") { base.removeLast() }
        self.baseURL = base
        self.client = client
        self.timeout = timeout
        self.maxBodyBytes = maxBodyBytes
        self.userAgent = userAgent
        if scheme == "http", let components = URLComponents(string: base) {
            let hostName = host.contains(":") ? "[\(host)]" : host
            self.plain = PlainHTTPFeed(
                pool: FeedConnectionPool(host: host, port: url.port ?? 80), basePath: components.percentEncodedPath,
                hostHeader: url.port.map { "\(hostName):\($0)" } ?? hostName, userAgent: userAgent)
        } else {
            self.plain = nil
        }
    }

    public func fetch(_ request: FeedRequest) async throws -> FeedResponse {
        guard let plain else { return try await fetchThroughClient(request) }
        let answer = try await plain.fetch(
            request, limit: maxBodyBytes, timeout: timeout, group: client.eventLoopGroup)
        // A feed that moved is followed as the shared client follows it.
        if Self.isRedirect(answer.status), answer.headers["location"] != nil {
            return try await fetchThroughClient(request)
        }
        return answer
    }

    private static func isRedirect(_ status: Int) -> Bool {
        switch status {
        case 301, 302, 303, 307, 308: true
        default: false
        }
    }

    /// `request` through the shared `HTTPClient`.
    private func fetchThroughClient(_ request: FeedRequest) async throws -> FeedResponse {
        var outgoing: HTTPClient.Request
        do {
            outgoing = try requests.request(for: request.path) { path throws in
                var headers = HTTPHeaders()
                headers.add(name: "accept", value: "application/json")
                headers.add(name: "user-agent", value: userAgent)
                return try HTTPClient.Request(url: baseURL + path, method: .GET, headers: headers)
            }
        } catch {
            throw FeedError.transport(error, path: request.path)
        }
        // Distinct names (lower-cased keys of a dictionary): the order they go in does not matter.
        for (name, value) in request.headers {
            outgoing.headers.replaceOrAdd(name: name, value: value)
        }
        // AsyncHTTPClient's event-loop API: its deadline bounds the whole exchange, body included. Called on one of
        // the client's event loops (a poll run by `EventLoopExecutor`), the collector runs on that loop and the pool
        // prefers a connection of it. Requiring one (`.delegateAndChannel`) would close and open connections
        // whenever the loop's own are busy. (The async `execute` starts a task on the global executor for every
        // request, and its deadline stops at the head.)
        let collector = FeedResponseCollector(limit: maxBodyBytes, path: request.path)
        let task = client.execute(
            request: outgoing, delegate: collector, eventLoop: .indifferent, deadline: .now() + TimeAmount(timeout))
        do {
            return try await withTaskCancellationHandler {
                try await task.futureResult.get()
            } onCancel: {
                task.cancel()
            }
        } catch {
            throw Self.feedError(error, path: request.path, limit: maxBodyBytes)
        }
    }

    private static func feedError(_ error: any Error, path: String, limit: Int) -> any Error {
        if Task.isCancelled { return CancellationError() }
        switch error {
        case let error as FeedError:
            return error
        case let error as HTTPClientError:
            switch error {
            case .deadlineExceeded, .readTimeout, .connectTimeout, .getConnectionFromPoolTimeout, .tlsHandshakeTimeout:
                return FeedError.timeout(path: path)
            default:
                return FeedError.transport(error, path: path)
            }
        default:
            return FeedError.transport(error, path: path)
        }
    }
}

/// Collects one feed answer for `HTTPFeedTransport` through AsyncHTTPClient (`FeedAnswer`). AsyncHTTPClient calls a
/// delegate on its task's event loop only, one call at a time, in order: that is what makes the unguarded state safe.
final class FeedResponseCollector: HTTPClientResponseDelegate, @unchecked Sendable {
    typealias Response = FeedResponse

    private var answer: FeedAnswer

    init(limit: Int, path: String) {
        answer = FeedAnswer(limit: limit, path: path)
    }

    func didReceiveHead(task: HTTPClient.Task<FeedResponse>, _ head: HTTPResponseHead) -> EventLoopFuture<Void> {
        task.eventLoop.makeCompletedFuture { try answer.receive(head) }
    }

    func didReceiveBodyPart(task: HTTPClient.Task<FeedResponse>, _ buffer: ByteBuffer) -> EventLoopFuture<Void> {
        var part = buffer
        return task.eventLoop.makeCompletedFuture { try answer.receive(&part) }
    }

    func didReceiveError(task: HTTPClient.Task<FeedResponse>, _ error: any Error) {}

    func didFinishRequest(task: HTTPClient.Task<FeedResponse>) throws -> FeedResponse {
        guard let complete = answer.complete else {
            throw FeedError.transport(FeedConnection.ClosedBeforeAnswer(), path: answer.path)
        }
        return complete
    }
}

/// The request for each path, built once: a poll asks for the same path every few seconds, and building a request
/// parses and percent-encodes its URL. At most `capacity` are kept; past that the table starts again.
final class RequestTemplates: Sendable {
    private let table = Mutex<[String: HTTPClient.Request]>([:])
    private let capacity: Int

    init(capacity: Int = 50_000) {
        self.capacity = capacity
    }

    func request(for path: String, build: (String) throws -> HTTPClient.Request) throws -> HTTPClient.Request {
        if let known = table.withLock({ $0[path] }) { return known }
        let built = try build(path)
        table.withLock { table in
            if table.count >= capacity { table.removeAll(keepingCapacity: true) }
            table[path] = built
        }
        return built
    }
}
