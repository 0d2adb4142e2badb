import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1

/// `FeedTransport` over a shared `HTTPClient`, which the caller owns and shuts down.
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
    }

    public func fetch(_ request: FeedRequest) async throws -> FeedResponse {
        let deadline = NIODeadline.now() + TimeAmount(timeout)
        let (response, head) = try await sendHead(request, deadline: deadline)
        // A 304 (an unchanged poll) or a 204 has no body: its end comes with the head, so no timer is needed for it
        // (reading it lets the client put the connection back in its pool).
        if head.status == 304 || head.status == 204 {
            return try await readBody(of: response, head: head, path: request.path)
        }
        // AsyncHTTPClient's deadline stops at the response head; racing a timer bounds the body too. On an event loop
        // (a poll run by `EventLoopExecutor`) the timer is that loop's, so it costs no thread of its own.
        let path = request.path
        let left = deadline - NIODeadline.now()  // signed: the head may have come in after the deadline
        guard left > .zero else { throw FeedError.timeout(path: path) }
        let remaining = Duration.nanoseconds(left.nanoseconds)
        return try await withThrowingTaskGroup(of: FeedResponse.self) { group in
            group.addTask { try await self.readBody(of: response, head: head, path: path) }
            group.addTask {
                try await EventLoopClock().sleep(for: remaining)
                throw FeedError.timeout(path: path)
            }
            defer { group.cancelAll() }
            guard let first = try await group.next() else { throw CancellationError() }
            return first
        }
    }

    /// Sends the request and waits for the response head, by `deadline`: the status and headers, no body yet.
    private func sendHead(_ request: FeedRequest, deadline: NIODeadline) async throws -> (HTTPClientResponse, FeedResponse) {
        var outgoing = HTTPClientRequest(url: baseURL + request.path)
        outgoing.method = .GET
        outgoing.headers.add(name: "accept", value: "application/json")
        outgoing.headers.add(name: "user-agent", value: userAgent)
        for (name, value) in request.headers.sorted(by: { $0.key < $1.key }) {
            outgoing.headers.replaceOrAdd(name: name, value: value)
        }
        let response: HTTPClientResponse
        do {
            response = try await client.execute(outgoing, deadline: deadline)
        } catch {
            throw Self.feedError(error, path: request.path, limit: maxBodyBytes)
        }
        var headers: [String: String] = [:]
        for (name, value) in response.headers {
            let key = name.lowercased()
            headers[key] = headers[key].map { $0 + ", " + value } ?? value
        }
        return (response, FeedResponse(status: Int(response.status.code), headers: headers, body: nil))
    }

    private func readBody(of response: HTTPClientResponse, head: FeedResponse, path: String) async throws -> FeedResponse {
        do {
            let buffer = try await response.body.collect(upTo: maxBodyBytes)
            var answer = head
            answer.body = buffer.readableBytes > 0 ? Data(buffer.readableBytesView) : nil
            return answer
        } catch {
            throw Self.feedError(error, path: path, limit: maxBodyBytes)
        }
    }

    private static func feedError(_ error: any Error, path: String, limit: Int) -> any Error {
        if Task.isCancelled { return CancellationError() }
        switch error {
        case is NIOTooManyBytesError:
            return FeedError.tooLarge(limit: limit, path: path)
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
