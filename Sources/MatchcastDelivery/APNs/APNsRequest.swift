import NIOCore
import NIOHPACK
import Synchronization

/// The headers every request of one update shares: everything but `:path` and `apns-id`. Built
/// once per update and provider token, referenced by every request (a class, so a request is a
/// few words, never a copy of the fields).
final class APNsRequestHead: Sendable {
    /// Regular header fields, in sending order (pseudo-headers are added by the connection).
    let fields: [(name: String, value: String)]

    init(authorization jwt: String, pushType: String, topic: String, priority: Int, expiration: Int) {
        fields = [
            ("authorization", "bearer " + jwt),
            ("apns-push-type", pushType),
            ("apns-topic", topic),
            ("apns-priority", String(priority)),
            ("apns-expiration", String(expiration)),
            ("content-type", "application/json"),
        ]
    }
}

/// One `POST /3/device/<token>`: the shared head, the path, the `apns-id` and the payload bytes
/// (a `ByteBuffer` sharing the update's one storage).
struct APNsRequest: Sendable {
    var head: APNsRequestHead
    /// `/3/device/<token>`.
    var path: String
    var apnsID: String
    var body: ByteBuffer
}

/// An answer from APNs, body read whole however it was framed.
struct APNsResponse: Sendable {
    var status: Int
    var retryAfter: String?
    var body: [UInt8]
}

/// Why a request got no answer. `kind` is a short fixed label for metrics.
struct APNsTransportError: Error, Sendable, CustomStringConvertible {
    enum Kind: String, Sendable {
        /// The request was written but no answer came within `requestTimeout`.
        case timeout
        /// No connection could be set up (TCP, TLS, ALPN or the server's settings).
        case connect
        /// Connection set-up took longer than `connectTimeout`.
        case connectTimeout = "connect_timeout"
        /// The connection closed before the answer, twice (the request was resent once already).
        case connectionClosed = "connection_closed"
        /// The server reset the stream.
        case streamReset = "stream_reset"
        /// The sender was shut down, or the send was cancelled.
        case cancelled
    }

    var kind: Kind
    var message: String

    var description: String { "\(kind.rawValue): \(message)" }

    /// Whether this is a deadline passing (the `timeout` kind of `matchcast_apns_request_errors_total`).
    var isTimeout: Bool { kind == .timeout || kind == .connectTimeout }
}

/// What became of one request.
enum APNsExchange: Sendable {
    case answered(APNsResponse)
    case failed(APNsTransportError)
}

/// One call of `APNsConnectionPool.send`: its requests, their results as they arrive, and the
/// continuation resumed when the last one is in. Connections complete entries from their event
/// loops; `finish` runs at most once.
final class APNsSendJob: Sendable {
    let requests: [APNsRequest]
    private struct State {
        var results: [APNsExchange?]
        var remaining: Int
        var continuation: CheckedContinuation<[APNsExchange], Never>?
        var cancelled = false
    }

    private let state: Mutex<State>

    init(requests: [APNsRequest]) {
        self.requests = requests
        state = Mutex(State(results: Array(repeating: nil, count: requests.count), remaining: requests.count))
    }

    var isCancelled: Bool { state.withLock { $0.cancelled } }

    /// Installs the continuation; resumes it at once when everything already finished.
    func wait(_ continuation: CheckedContinuation<[APNsExchange], Never>) {
        let done: [APNsExchange]? = state.withLock { state in
            if state.remaining == 0 { return state.results.map { $0! } }
            state.continuation = continuation
            return nil
        }
        if let done { continuation.resume(returning: done) }
    }

    /// Records the result of request `index` unless it already has one (a late answer after a
    /// timeout, say, is dropped).
    func complete(_ index: Int, with result: APNsExchange) {
        let resume: (CheckedContinuation<[APNsExchange], Never>, [APNsExchange])? = state.withLock { state in
            guard state.results[index] == nil else { return nil }
            state.results[index] = result
            state.remaining -= 1
            guard state.remaining == 0, let continuation = state.continuation else { return nil }
            state.continuation = nil
            return (continuation, state.results.map { $0! })
        }
        if let (continuation, results) = resume { continuation.resume(returning: results) }
    }

    /// Fails every request without a result yet; requests still queued are then skipped.
    func cancel(_ error: APNsTransportError) {
        let indices: [Int] = state.withLock { state in
            state.cancelled = true
            return state.results.indices.filter { state.results[$0] == nil }
        }
        for index in indices { complete(index, with: .failed(error)) }
    }
}
