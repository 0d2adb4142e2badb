import AsyncHTTPClient
import Foundation
import Logging
import MatchcastCore
import NIOCore

/// Sends one delivery to the subscription until it is settled: accepted, dead-lettered, superseded by a newer push of
/// its match, or refused because the subscription is gone. Every way out counts the delivery once
/// (`matchcast_deliveries_total{sink="webpush"}`, `WebPushSink.settled`).
struct WebPushSender: Sendable {
    let configuration: WebPushSinkConfiguration
    let client: HTTPClient
    let deadLetters: any DeadLetterRecorder
    let clock: any Clock<Duration>
    let now: @Sendable () -> Date
    let metrics: WebPushMetrics
    let logger: Logger
    let state: WebPushSinkState
    /// The subscription's push service gets one VAPID token, reused until shortly before it expires.
    let vapidTokens: VAPIDTokenCache
    /// Routed by target: told of each subscription the push service calls gone (its target value, and why).
    let onGone: @Sendable (_ subscription: String, _ reason: String) async -> Void

    enum Result: Sendable {
        case delivered
        case deadLettered
        case superseded
        /// The push service said the subscription is gone; this delivery is dead-lettered already.
        case gone(WebPushSubscriptionGone)
    }

    /// - Parameter isSuperseded: asked after each backoff: whether a newer push of the match waits, which makes a
    ///   retried update pointless (its `Topic` would replace it at the push service anyway).
    func send(_ item: WebPushItem, isSuperseded: @Sendable () async -> Bool) async -> Result {
        let elapsed = Stopwatch.start(clock)
        var logger = logger
        logger[metadataKey: "delivery.id"] = "\(item.delivery.id)"
        logger[metadataKey: "match"] = "\(item.matchId)"
        var attempt = 0
        while true {
            if let gone = state.gone {
                await deadLetter(item, status: gone.status, body: Self.goneBody(gone), logger: logger)
                return .deadLettered
            }
            if state.closed || Task.isCancelled {
                await deadLetter(item, status: 0, body: Self.shutDownBody, logger: logger)
                return .deadLettered
            }
            attempt += 1
            let message: WebPushMessage
            do {
                let payload = try item.surface.webPushPayload(now: now())
                message = try WebPushMessage(
                    payload: payload.body, to: item.subscription, vapid: configuration.vapid, ttl: payload.ttl,
                    urgency: payload.urgency == .high ? .high : .normal,
                    topic: WebPushMessage.topic(forMatch: item.matchId), now: now(), vapidTokens: vapidTokens)
            } catch {
                await deadLetter(item, status: 0, body: "not sent: \(error)", logger: logger)
                return .deadLettered
            }

            var retryAfter: Duration?
            let problem: String
            var lastStatus = 0
            var lastBody = ""
            do {
                let answer = try await post(message)
                state.answered(status: answer.status, at: now())
                let body = String(decoding: answer.body, as: UTF8.self)
                switch WebPushMessage.Outcome(status: answer.status, retryAfter: answer.retryAfter, now: now()) {
                case .accepted:
                    metrics.request(outcome: "accepted")
                    settle(.delivered)
                    logger.debug("web push accepted", metadata: ["webpush.status": "\(answer.status)", "webpush.attempt": "\(attempt)"])
                    return .delivered
                case .subscriptionGone:
                    metrics.request(outcome: "gone")
                    let gone = WebPushSubscriptionGone(status: answer.status, origin: item.subscription.origin)
                    await deadLetter(item, status: answer.status, body: body.isEmpty ? Self.goneBody(gone) : body, logger: logger)
                    return .gone(gone)
                case .tooLarge:
                    metrics.request(outcome: "too_large")
                    await deadLetter(item, status: answer.status, body: body, logger: logger)
                    return .deadLettered
                case .refused(let status):
                    metrics.request(outcome: "refused")
                    await deadLetter(item, status: status, body: body, logger: logger)
                    return .deadLettered
                case .retry(let after):
                    metrics.request(outcome: answer.status == 429 ? "throttled" : "server_error")
                    retryAfter = after
                    problem = "HTTP \(answer.status)"
                    lastStatus = answer.status
                    lastBody = body
                }
            } catch {
                if error is CancellationError || Task.isCancelled {
                    await deadLetter(item, status: 0, body: Self.shutDownBody, logger: logger)
                    return .deadLettered
                }
                state.failing(at: now())
                let timedOut = Self.isTimeout(error)
                metrics.request(outcome: timedOut ? "timeout" : "connection_error")
                problem = timedOut ? "timeout" : "connection error: \(error)"
            }
            let delay = configuration.retry.delay(
                afterAttempt: attempt, retryAfter: retryAfter, elapsed: elapsed(), random: Double.random(in: 0..<1))
            guard let delay else {
                let text = "gave up after \(attempt) attempts; last: \(problem)" + (lastBody.isEmpty ? "" : ": \(lastBody)")
                await deadLetter(item, status: lastStatus, body: text, logger: logger)
                return .deadLettered
            }
            logger.notice("web push attempt failed; retrying", metadata: [
                "webpush.attempt": "\(attempt)", "webpush.problem": "\(problem)", "webpush.delay": "\(delay)",
            ])
            do {
                try await clock.sleep(for: delay)
            } catch {
                await deadLetter(item, status: 0, body: Self.shutDownBody, logger: logger)
                return .deadLettered
            }
            if item.event == .update, await isSuperseded() {
                settle(.superseded)
                logger.debug("web push superseded by a newer push of its match while waiting to retry")
                return .superseded
            }
        }
    }

    /// The dead-letter body of a delivery not sent because the subscription is gone.
    static func goneBody(_ gone: WebPushSubscriptionGone) -> String {
        "not sent: the subscription is gone (HTTP \(gone.status) from \(gone.origin))"
    }

    static let shutDownBody = "not sent: the web push sink shut down first"

    enum Settlement: String {
        case delivered
        case deadLetter = "dead_letter"
        case superseded
    }

    /// Counts one delivery's end.
    func settle(_ settlement: Settlement, count: Int = 1) {
        guard count > 0 else { return }
        metrics.deliveries(outcome: settlement.rawValue, count: count)
        state.locked { values in
            switch settlement {
            case .delivered: values.settled.delivered += count
            case .deadLetter: values.settled.deadLettered += count
            case .superseded: values.settled.superseded += count
            }
        }
    }

    /// Hands `item` to the dead-letter recorder with the status (0: no answer) and the body (the push service's was
    /// cut to `maxErrorBodyBytes` when read), and counts it.
    func deadLetter(_ item: WebPushItem, status: Int, body: String, logger: Logger) async {
        await deadLetter(item.delivery, event: item.event, status: status, body: body, logger: logger)
    }

    func deadLetter(_ delivery: Delivery, event: ActivityEvent, status: Int, body: String, logger: Logger) async {
        await deadLetters.record([delivery], status: status, body: body)
        settle(.deadLetter)
        logger.warning("web push not delivered; dead-lettered", metadata: [
            "webpush.status": "\(status)", "delivery.event": "\(event.rawValue)",
        ])
    }

    private struct Answer: Sendable {
        var status: Int
        var retryAfter: String?
        var body: [UInt8]
    }

    private struct RequestTimedOut: Error {}

    private static func isTimeout(_ error: any Error) -> Bool {
        if error is RequestTimedOut { return true }
        guard let error = error as? HTTPClientError else { return false }
        switch error {
        case .deadlineExceeded, .readTimeout, .connectTimeout, .getConnectionFromPoolTimeout, .tlsHandshakeTimeout, .writeTimeout:
            return true
        default:
            return false
        }
    }

    /// One POST, raced against `requestTimeout` so that a trickling answer cannot hang it.
    private func post(_ message: WebPushMessage) async throws -> Answer {
        let timeout = configuration.requestTimeout
        return try await withThrowingTaskGroup(of: Answer.self) { group in
            group.addTask { try await exchange(message) }
            group.addTask {
                try await Task.sleep(for: timeout)
                throw RequestTimedOut()
            }
            defer { group.cancelAll() }
            guard let first = try await group.next() else { throw CancellationError() }
            return first
        }
    }

    private func exchange(_ message: WebPushMessage) async throws -> Answer {
        var request = HTTPClientRequest(url: message.endpoint.absoluteString)
        request.method = .POST
        request.headers.add(name: "user-agent", value: "matchcast")
        for (name, value) in message.headers.sorted(by: { $0.key < $1.key }) {
            request.headers.add(name: name, value: value)
        }
        request.body = .bytes(ByteBuffer(bytes: message.body))
        let response = try await client.execute(request, timeout: .nanoseconds(configuration.requestTimeout.wholeNanoseconds))
        let body = try await response.keptBody(ofRefusalUpTo: configuration.maxErrorBodyBytes)
        return Answer(status: Int(response.status.code), retryAfter: response.headers.first(name: "retry-after"), body: body)
    }
}
