import NIOCore
import NIOHPACK
import Synchronization

/// The headers every request of one update shares: everything but `:path` and `apns-id`. Built
/// once per update and provider token, referenced by every request (a class, so a request is a
/// few words, never a copy of the fields). The fields are HPACK-encoded once, here, and copied as
/// bytes into every request's header block.
final class APNsRequestHead: Sendable {
    /// `:method`: `POST` for pushes; channel management also uses `GET` and `DELETE`.
    let method: String
    /// The regular header fields as HPACK literals without indexing (no Huffman), ready to copy.
    let encodedFields: ByteBuffer

    /// Any request: `fields` are regular (not pseudo) header fields, names lowercase.
    init(method: String = "POST", fields: [(name: String, value: String)]) {
        self.method = method
        var buffer = ByteBuffer()
        for field in fields { HTTP2Wire.writeField(name: field.name, value: field.value, into: &buffer) }
        encodedFields = buffer
    }

    /// A push: `POST /3/device/<token>`.
    convenience init(authorization jwt: String, pushType: String, topic: String, priority: Int, expiration: Int) {
        self.init(fields: [
            ("authorization", "bearer " + jwt),
            ("apns-push-type", pushType),
            ("apns-topic", topic),
            ("apns-priority", String(priority)),
            ("apns-expiration", String(expiration)),
            ("content-type", "application/json"),
        ])
    }
}

/// One request: the shared head, the path, the `apns-id` and the body (a `ByteBuffer` sharing the
/// update's one storage). A push is `POST /3/device/<token>`; any other path (broadcast sends,
/// channel management) goes through the same connections.
struct APNsRequest: Sendable {
    var head: APNsRequestHead
    /// `/3/device/<token>` for a push.
    var path: String
    /// Sent as `apns-id` when set.
    var apnsID: String?
    /// Empty for a request without a body (its HEADERS end the stream).
    var body: ByteBuffer
}

/// An answer from APNs, body read whole however it was framed.
struct APNsResponse: Sendable {
    var status: Int
    var retryAfter: String?
    var body: [UInt8]
    /// Every header field of the answer (`:status` included), as decoded.
    var headers: HPACKHeaders = HPACKHeaders()
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
    }

    private let state: Mutex<State>
    /// Read for every request a connection takes: an atomic, not the lock.
    private let cancelled = Atomic<Bool>(false)

    init(requests: [APNsRequest]) {
        self.requests = requests
        state = Mutex(State(results: Array(repeating: nil, count: requests.count), remaining: requests.count))
    }

    var isCancelled: Bool { cancelled.load(ordering: .relaxed) }

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
        complete(CollectionOfOne((index: index, result: result)))
    }

    /// Records several results under one lock (a connection completes what one read answered at
    /// once); each only if its request has none yet.
    func complete(_ entries: some Sequence<(index: Int, result: APNsExchange)>) {
        let resume: (CheckedContinuation<[APNsExchange], Never>, [APNsExchange])? = state.withLock { state in
            for (index, result) in entries where state.results[index] == nil {
                state.results[index] = result
                state.remaining -= 1
            }
            guard state.remaining == 0, let continuation = state.continuation else { return nil }
            state.continuation = nil
            return (continuation, state.results.map { $0! })
        }
        if let (continuation, results) = resume { continuation.resume(returning: results) }
    }

    /// Fails every request without a result yet; requests still queued are then skipped.
    func cancel(_ error: APNsTransportError) {
        cancelled.store(true, ordering: .relaxed)
        // Requests answered in the meantime keep their answer.
        complete(requests.indices.lazy.map { (index: $0, result: APNsExchange.failed(error)) })
    }
}
