import Foundation
import HTTPTypes
import Hummingbird
import Logging
import MatchcastCore
import MatchcastDelivery
import NIOCore
import Synchronization

/// A real HTTP webhook endpoint on `127.0.0.1` (a free port) for tests: it verifies every request's
/// Standard Webhooks signature, decodes the deliveries, keeps what it accepted in arrival order, and
/// can be told to fail the next requests.
///
/// Any path is accepted. A request that fails verification is answered 401, a body that does not
/// decode 422 (both are recorded in `log`, neither in `received`).
///
/// ```swift
/// let receiver = try await WebhookReceiver.start(secret: secret)
/// receiver.fail(next: 2, with: .unavailable)
/// ...
/// await receiver.stop()
/// ```
public final class WebhookReceiver: Sendable {
    /// What to do to a request instead of accepting it.
    public enum Fault: Sendable, Hashable {
        /// 503 Service Unavailable.
        case unavailable
        /// 429 Too Many Requests with `Retry-After: 1`.
        case tooManyRequests
        /// 400 Bad Request, which a sender must not retry.
        case badRequest
        /// No answer: the connection is closed once the request has been read, as a crashed
        /// endpoint would (the sender sees a connection error, never a status).
        case down
    }

    /// One request as the receiver saw it.
    public struct Request: Sendable, Hashable {
        public var webhookID: String?
        public var webhookTimestamp: String?
        /// The status answered, or nil when the connection was dropped (`Fault.down`).
        public var status: Int?
        /// Why verification failed, or nil when the signature and timestamp were good.
        public var verificationFailure: String?
        /// How many deliveries the body held (0 when it did not decode).
        public var deliveryCount: Int
    }

    /// The port the server listens on.
    public let port: Int
    private let state: SharedState
    private let server: LocalHTTPServer

    private init(port: Int, state: SharedState, server: LocalHTTPServer) {
        self.port = port
        self.state = state
        self.server = server
    }

    /// The endpoint to post to.
    public var url: String { "http://127.0.0.1:\(port)/webhook" }

    /// Starts a receiver that verifies with `secret`, checking timestamps against `now`.
    /// The server runs in a task this receiver owns until `stop()`.
    public static func start(secret: WebhookSecret, now: @escaping @Sendable () -> Date = { Date() }) async throws
        -> WebhookReceiver
    {
        let state = SharedState(signer: WebhookSigner(secret: secret), now: now)
        let responder = CallbackResponder<Context> { request, context in
            try await state.respond(to: request, context: context)
        }
        let server = try await LocalHTTPServer.start(
            name: "webhook receiver", serverName: "matchcast-webhook-receiver", responder: responder)
        return WebhookReceiver(port: server.port, state: state, server: server)
    }

    /// Runs `body` with a started receiver and stops it afterwards, whether `body` throws or not.
    public static func with<T>(
        secret: WebhookSecret, _ body: (WebhookReceiver) async throws -> T
    ) async throws -> T {
        try await withStopping(try await start(secret: secret), stop: { await $0.stop() }, body)
    }

    /// Stops the server and waits until it has.
    public func stop() async {
        await server.stop()
    }

    /// Makes the next `count` requests meet `fault` (after any faults already queued).
    public func fail(next count: Int, with fault: Fault) {
        state.locked { $0.faults.append(contentsOf: repeatElement(fault, count: max(0, count))) }
    }

    /// Makes every request meet `fault` until called again with nil (after any queued `fail(next:)` faults):
    /// a receiver that is down for a while.
    public func failAll(with fault: Fault?) {
        state.locked { $0.standing = fault }
    }

    /// Answers every request only after `delay` (a slow receiver).
    public func answer(after delay: Duration) {
        state.locked { $0.delay = delay }
    }

    /// Every delivery accepted so far, in arrival order.
    public var received: [DeliveryRecord] { state.locked { $0.received } }

    /// How many requests were answered (or dropped), whatever the answer.
    public var requests: Int { state.locked { $0.log.count } }

    /// How many requests have arrived, answered or not yet: `arrivals > requests` while one is being answered.
    public var arrivals: Int { state.locked { $0.arrivals } }

    /// Every request so far, in arrival order.
    public var log: [Request] { state.locked { $0.log } }

    /// The deliveries of each accepted request, one array per request, in arrival order.
    public var acceptedBatches: [[DeliveryRecord]] { state.locked { $0.batches } }

    typealias Context = ChannelRequestContext
}

extension WebhookReceiver {
    /// What the server's handler and the test share.
    final class SharedState: Sendable {
        struct Values {
            var faults: [Fault] = []
            var standing: Fault?
            var delay: Duration = .zero
            var arrivals = 0
            var received: [DeliveryRecord] = []
            var batches: [[DeliveryRecord]] = []
            var log: [Request] = []
        }

        private struct Envelope: Decodable {
            var deliveries: [DeliveryRecord]
        }

        let signer: WebhookSigner
        let now: @Sendable () -> Date
        private let values = Mutex(Values())

        init(signer: WebhookSigner, now: @escaping @Sendable () -> Date) {
            self.signer = signer
            self.now = now
        }

        func locked<T>(_ body: (inout Values) -> T) -> T {
            values.withLock { body(&$0) }
        }

        func respond(to request: Hummingbird.Request, context: Context) async throws -> Response {
            let buffer = try await request.body.collect(upTo: 64 << 20)
            let body = Array(buffer.readableBytesView)
            let id = request.headers[HTTPField.Name(WebhookSigner.Header.id)!]
            let timestamp = request.headers[HTTPField.Name(WebhookSigner.Header.timestamp)!]
            let signature = request.headers[HTTPField.Name(WebhookSigner.Header.signature)!]
            var entry = Request(webhookID: id, webhookTimestamp: timestamp, status: nil, verificationFailure: nil, deliveryCount: 0)
            let records = try? JSONDecoder().decode(Envelope.self, from: Data(body)).deliveries
            entry.deliveryCount = records?.count ?? 0
            do {
                try signer.verify(id: id, timestamp: timestamp, signatures: signature, body: body, now: now())
            } catch {
                entry.verificationFailure = error.reason
            }

            let delay = values.withLock { values in
                values.arrivals += 1
                return values.delay
            }
            if delay > .zero { try await Task.sleep(for: delay) }

            // Decide and record under one lock, so concurrent requests take faults in arrival order.
            enum Answer { case drop, status(HTTPResponse.Status, retryAfter: String?, body: String) }
            let answer: Answer = values.withLock { values in
                let answer: Answer
                let fault = values.faults.isEmpty ? values.standing : values.faults.removeFirst()
                if let fault {
                    switch fault {
                    case .unavailable: answer = .status(.serviceUnavailable, retryAfter: nil, body: #"{"error":"injected 503"}"#)
                    case .tooManyRequests: answer = .status(.tooManyRequests, retryAfter: "1", body: #"{"error":"injected 429"}"#)
                    case .badRequest: answer = .status(.badRequest, retryAfter: nil, body: #"{"error":"injected 400"}"#)
                    case .down: answer = .drop
                    }
                } else if let failure = entry.verificationFailure {
                    answer = .status(.unauthorized, retryAfter: nil, body: #"{"error":"\#(failure)"}"#)
                } else if let records {
                    values.received.append(contentsOf: records)
                    values.batches.append(records)
                    answer = .status(.ok, retryAfter: nil, body: #"{"accepted":\#(records.count)}"#)
                } else {
                    answer = .status(.unprocessableContent, retryAfter: nil, body: #"{"error":"body is not {\"deliveries\":[...]}"}"#)
                }
                if case .status(let status, _, _) = answer { entry.status = status.code }
                values.log.append(entry)
                return answer
            }

            switch answer {
            case .drop:
                try? await context.channel.close()
                throw CancellationError()
            case .status(let status, let retryAfter, let text):
                var headers: HTTPFields = [.contentType: "application/json"]
                if let retryAfter { headers[.retryAfter] = retryAfter }
                return Response(status: status, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(string: text)))
            }
        }
    }
}
