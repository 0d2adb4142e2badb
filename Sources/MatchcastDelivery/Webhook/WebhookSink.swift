import AsyncHTTPClient
import CoreMetrics
import Foundation
import Logging
import MatchcastCore

/// Posts deliveries to an HTTP endpoint as Standard Webhooks (docs/formats.md, "Webhook"):
/// `{"deliveries": [Delivery, ...]}`, signed with `webhook-id`, `webhook-timestamp`, `webhook-signature`.
///
/// `deliver(_:)` splits the batch into requests of at most `maxBatch` deliveries, at most
/// `maxConcurrentRequests` in flight. A 2xx acknowledges a request's deliveries; 429, 5xx, timeouts
/// and connection errors are retried with jittered exponential backoff (never sooner than a
/// `Retry-After`) under the same `webhook-id`; any other status makes them dead letters, handed to
/// the `DeadLetterRecorder` and not retried. Sleeps between attempts go through the injected clock.
///
/// The `HTTPClient` is the caller's: this sink never creates or shuts one down.
public struct WebhookSink: DeliverySink {
    public let name = "webhook"
    public var countsDeliveries: Bool { true }
    public let configuration: WebhookSinkConfiguration
    private let client: HTTPClient
    private let signer: WebhookSigner
    private let deadLetters: any DeadLetterRecorder
    private let clock: any Clock<Duration>
    private let now: @Sendable () -> Date
    private let metrics: WebhookMetrics
    private let logger: Logger
    /// `scheme://host[:port]`: the URL without the path or query, which may hold a token.
    private let endpoint: String

    /// - Parameters:
    ///   - clock: what retries sleep on; a manual clock in tests.
    ///   - now: wall time for `webhook-timestamp` and HTTP-date `Retry-After` values.
    /// - Throws: `WebhookError` (`config`) for a URL that is not absolute http(s), or limits that are not positive.
    public init(
        configuration: WebhookSinkConfiguration,
        client: HTTPClient,
        deadLetters: any DeadLetterRecorder,
        clock: any Clock<Duration> = ContinuousClock(),
        now: @escaping @Sendable () -> Date = { Date() },
        metricsFactory: any MetricsFactory = MetricsSystem.factory,
        logger: Logger = Logger(label: "matchcast.webhook")
    ) throws(WebhookError) {
        endpoint = try configuration.validate()
        self.configuration = configuration
        self.client = client
        self.signer = WebhookSigner(secret: configuration.secret)
        self.deadLetters = deadLetters
        self.clock = clock
        self.now = now
        self.metrics = WebhookMetrics(factory: metricsFactory)
        var logger = logger
        logger[metadataKey: "webhook.endpoint"] = "\(endpoint)"
        self.logger = logger
    }

    /// Returns once every delivery in `batch` is acknowledged (2xx) or dead-lettered.
    ///
    /// Throws `WebhookError` (`retries_exhausted`) when some request used up its attempts or the total
    /// deadline: its deliveries, and those of requests not yet started, are in `undelivered`. They are
    /// the caller's to keep and deliver later (ids are stable, so a receiver can drop repeats).
    /// Cancellation stops retrying and throws `CancellationError`.
    public func deliver(_ batch: [Delivery]) async throws {
        guard !batch.isEmpty else { return }
        let size = configuration.maxBatch
        let batches = stride(from: 0, to: batch.count, by: size).map { Array(batch[$0..<min($0 + size, batch.count)]) }
        let width = configuration.maxConcurrentRequests

        var failed: [(index: Int, attempts: Int, last: String)] = []
        var started = 0
        try await withThrowingTaskGroup(of: (Int, Result).self) { group in
            while started < min(width, batches.count) {
                let index = started
                group.addTask { (index, try await send(WebhookBatch(batches[index]))) }
                started += 1
            }
            while let (index, result) = try await group.next() {
                if case .exhausted(let attempts, let last) = result {
                    failed.append((index, attempts, last))
                }
                // Once one request has given up the endpoint is likely down: start no more.
                if failed.isEmpty, started < batches.count {
                    let next = started
                    group.addTask { (next, try await send(WebhookBatch(batches[next]))) }
                    started += 1
                }
            }
        }
        guard !failed.isEmpty else { return }
        failed.sort { $0.index < $1.index }
        let undelivered = failed.flatMap { batches[$0.index] } + batches[started...].joined()
        metrics.deliveries(outcome: "failed", count: undelivered.count)
        let attempts = failed.map(\.attempts).max() ?? 0
        throw WebhookError.retriesExhausted(
            batches: failed.count + batches.count - started, attempts: attempts, last: failed[0].last,
            undelivered: undelivered)
    }

    private enum Result: Sendable {
        case delivered
        case deadLettered
        case exhausted(attempts: Int, last: String)
    }

    /// One request, retried until acknowledged, refused, or out of attempts.
    private func send(_ batch: WebhookBatch) async throws -> Result {
        let elapsed = Stopwatch.start(clock)
        var logger = logger
        logger[metadataKey: "webhook.id"] = "\(batch.id)"
        logger[metadataKey: "webhook.count"] = "\(batch.deliveries.count)"
        var attempt = 0
        while true {
            attempt += 1
            let outcome: WebhookAttempt.Outcome
            var retryAfter: Duration?
            var problem: String
            do {
                let answer = try await post(batch)
                outcome = WebhookAttempt.outcome(status: answer.status)
                problem = "HTTP \(answer.status)"
                switch outcome {
                case .delivered:
                    metrics.request(outcome: outcome)
                    metrics.deliveries(outcome: "delivered", count: batch.deliveries.count)
                    logger.debug("webhook delivered", metadata: ["webhook.status": "\(answer.status)", "webhook.attempt": "\(attempt)"])
                    return .delivered
                case .rejected:
                    metrics.request(outcome: outcome)
                    return await deadLetter(batch, status: answer.status, body: answer.body, logger: logger)
                default:
                    retryAfter = RetryPolicy.retryAfter(answer.retryAfter, now: now())
                }
            } catch {
                // A cancelled attempt is shutdown, not a failure of the endpoint.
                if error is CancellationError || Task.isCancelled { throw CancellationError() }
                outcome = WebhookAttempt.outcome(error: error)
                problem = outcome == .timeout ? "timeout" : "connection error: \(error)"
            }
            metrics.request(outcome: outcome)
            let delay = configuration.retry.delay(
                afterAttempt: attempt, retryAfter: retryAfter, elapsed: elapsed(), random: Double.random(in: 0..<1))
            guard let delay else {
                logger.error("webhook retries exhausted", metadata: ["webhook.attempt": "\(attempt)", "webhook.last": "\(problem)"])
                return .exhausted(attempts: attempt, last: problem)
            }
            logger.notice("webhook attempt failed; retrying", metadata: [
                "webhook.attempt": "\(attempt)", "webhook.problem": "\(problem)", "webhook.delay": "\(delay)",
            ])
            try await clock.sleep(for: delay)
        }
    }

    private func deadLetter(_ batch: WebhookBatch, status: Int, body: [UInt8], logger: Logger) async -> Result {
        let text = String(decoding: body, as: UTF8.self)
        await deadLetters.record(batch.deliveries, status: status, body: text)
        metrics.deliveries(outcome: "dead_letter", count: batch.deliveries.count)
        logger.warning("webhook refused a batch; dead-lettered", metadata: [
            "webhook.status": "\(status)",
            "delivery.first": "\(batch.deliveries[0].id)",
            "delivery.target": "\(batch.deliveries[0].target.redacted)",
        ])
        return .deadLettered
    }

    private struct Answer: Sendable {
        var status: Int
        var retryAfter: String?
        var body: [UInt8]
    }

    /// One signed POST, raced against `requestTimeout` so a trickling body cannot hang it.
    private func post(_ batch: WebhookBatch) async throws -> Answer {
        let timeout = configuration.requestTimeout
        return try await withThrowingTaskGroup(of: Answer.self) { group in
            group.addTask { try await exchange(batch) }
            group.addTask {
                try await Task.sleep(for: timeout)
                throw WebhookAttempt.RequestTimedOut()
            }
            defer { group.cancelAll() }
            guard let first = try await group.next() else { throw CancellationError() }
            return first
        }
    }

    private func exchange(_ batch: WebhookBatch) async throws -> Answer {
        var request = HTTPClientRequest(url: configuration.url)
        request.method = .POST
        request.headers.add(name: "content-type", value: "application/json")
        request.headers.add(name: "user-agent", value: "matchcast")
        // A fresh timestamp (and so signature) per attempt, as the spec asks; the id stays.
        let timestamp = Int64(now().timeIntervalSince1970.rounded(.down))
        for header in signer.headers(id: batch.id, timestamp: timestamp, body: batch.body) {
            request.headers.add(name: header.name, value: header.value)
        }
        request.body = .bytes(batch.body)
        let response = try await client.execute(request, timeout: .nanoseconds(configuration.requestTimeout.wholeNanoseconds))
        let body = try await response.keptBody(ofRefusalUpTo: configuration.maxErrorBodyBytes)
        return Answer(status: Int(response.status.code), retryAfter: response.headers.first(name: "retry-after"), body: body)
    }
}
