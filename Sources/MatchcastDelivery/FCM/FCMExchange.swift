import AsyncHTTPClient
import NIOCore

/// One HTTP POST of the FCM sink (a send, or a token exchange) and its answer, through the caller's `HTTPClient`.
struct FCMExchange: Sendable {
    /// An answer: its status, its `Retry-After`, and the start of its body.
    struct Answer: Sendable {
        var status: Int
        var retryAfter: String?
        var body: [UInt8]

        var bodyText: String { String(decoding: body, as: UTF8.self) }
    }

    /// The exchange did not end within its timeout.
    struct TimedOut: Error, CustomStringConvertible {
        var description: String { "no answer in time" }
    }

    let client: HTTPClient
    let timeout: Duration
    /// The most of a body kept; a longer one is read no further.
    let maxBodyBytes: Int

    /// Posts `body` to `url` with `headers`, raced against `timeout`, so a server trickling its answer cannot hang it.
    func post(url: String, headers: [(String, String)], body: [UInt8]) async throws -> Answer {
        let timeout = self.timeout
        return try await withThrowingTaskGroup(of: Answer.self) { group in
            group.addTask { try await exchange(url: url, headers: headers, body: body) }
            group.addTask {
                try await Task.sleep(for: timeout)
                throw TimedOut()
            }
            defer { group.cancelAll() }
            guard let first = try await group.next() else { throw CancellationError() }
            return first
        }
    }

    private func exchange(url: String, headers: [(String, String)], body: [UInt8]) async throws -> Answer {
        var request = HTTPClientRequest(url: url)
        request.method = .POST
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        request.headers.add(name: "user-agent", value: "matchcast")
        request.body = .bytes(body)
        let response = try await client.execute(request, timeout: .nanoseconds(timeout.wholeNanoseconds))
        var kept: [UInt8] = []
        for try await chunk in response.body {
            if kept.count < maxBodyBytes { kept.append(contentsOf: chunk.readableBytesView.prefix(maxBodyBytes - kept.count)) }
            // Past the limit, drop the connection rather than read an endless body.
            if kept.count >= maxBodyBytes { break }
        }
        return Answer(status: Int(response.status.code), retryAfter: response.headers.first(name: "retry-after"), body: kept)
    }

    /// The `kind` label of a failure with no answer: `timeout` or `connection_error`.
    static func errorKind(_ error: any Error) -> String {
        if error is TimedOut { return "timeout" }
        if let error = error as? HTTPClientError {
            switch error {
            case .deadlineExceeded, .readTimeout, .connectTimeout, .getConnectionFromPoolTimeout, .tlsHandshakeTimeout, .writeTimeout:
                return "timeout"
            default:
                return "connection_error"
            }
        }
        return "connection_error"
    }
}
