import AsyncHTTPClient
import Foundation
import MatchcastCore
import MatchcastDelivery
import MatchcastTesting
import Testing

/// The webhook sink against a real HTTP receiver on a loopback port: batching, signing, retries,
/// dead letters. Retry sleeps go through an injected clock, so nothing here waits for real.
@Suite("Webhook sink", .timeLimit(.minutes(1)))
struct WebhookSinkTests {
    private typealias F = WebhookFixture

    /// Runs `body` with a started receiver and a fresh client; both are stopped afterwards.
    private static func withReceiver(_ body: (WebhookReceiver, HTTPClient) async throws -> Void) async throws {
        try await WebhookReceiver.with(secret: F.secret) { receiver in
            try await F.withClient { client in try await body(receiver, client) }
        }
    }

    private static func chunks(_ deliveries: [Delivery], of size: Int) -> [[Delivery]] {
        stride(from: 0, to: deliveries.count, by: size).map { Array(deliveries[$0..<min($0 + size, deliveries.count)]) }
    }

    @Test func sendsALargeBatchAsSignedRequestsOfAtMost500() async throws {
        let deliveries = F.deliveries(1200)
        let metrics = RecordingMetrics()
        try await Self.withReceiver { receiver, client in
            let sink = try F.sink(url: receiver.url, client: client, clock: InstantClock(), metrics: metrics)
            #expect(sink.name == "webhook")
            try await sink.deliver(deliveries)

            let log = receiver.log
            #expect(log.count == 3)
            #expect(log.allSatisfy { $0.status == 200 && $0.verificationFailure == nil })
            // Requests run concurrently, so they may arrive in any order; each one is in order.
            let batches = receiver.acceptedBatches.sorted { $0[0].id < $1[0].id }
            #expect(batches.map(\.count) == [500, 500, 200])
            #expect(batches.flatMap { $0.map(\.id) } == deliveries.map(\.id))
            #expect(receiver.received.count == 1200)
            #expect(Set(receiver.received.map(\.id)).count == 1200)
            let expectedIDs = Set(Self.chunks(deliveries, of: 500).map { WebhookBatch.id(for: $0) })
            #expect(Set(log.compactMap(\.webhookID)) == expectedIDs)
            // What arrived is what was sent, field for field.
            let first = try #require(receiver.received.first { $0.id == deliveries[0].id })
            #expect(first.target == deliveries[0].target)
            #expect(first.apns == deliveries[0].apns)
            #expect(first.payload.aps == deliveries[0].payload.aps)
        }
        #expect(metrics.counter("matchcast_webhook_requests_total", [("outcome", "delivered")]) == 3)
        #expect(metrics.counter("matchcast_deliveries_total", [("sink", "webhook"), ("outcome", "delivered")]) == 1200)
    }

    @Test func oneRequestInFlightKeepsTheExactOrder() async throws {
        let deliveries = F.deliveries(1001)
        try await Self.withReceiver { receiver, client in
            let sink = try F.sink(url: receiver.url, client: client, clock: InstantClock(), maxBatch: 100, maxConcurrentRequests: 1)
            try await sink.deliver(deliveries)
            #expect(receiver.requests == 11)
            #expect(receiver.received.map(\.id) == deliveries.map(\.id))
            #expect(receiver.acceptedBatches.map(\.count) == Array(repeating: 100, count: 10) + [1])
        }
    }

    @Test func retries503UnderTheSameBatchId() async throws {
        let deliveries = F.deliveries(3)
        let clock = InstantClock()
        let metrics = RecordingMetrics()
        let deadLetters = InMemoryDeadLetters()
        try await Self.withReceiver { receiver, client in
            receiver.fail(next: 2, with: .unavailable)
            let sink = try F.sink(url: receiver.url, client: client, clock: clock, deadLetters: deadLetters, metrics: metrics)
            try await sink.deliver(deliveries)

            let log = receiver.log
            #expect(log.map(\.status) == [503, 503, 200])
            #expect(log.allSatisfy { $0.verificationFailure == nil })
            #expect(log.map(\.webhookID) == Array(repeating: WebhookBatch.id(for: deliveries), count: 3))
            #expect(receiver.received.map(\.id) == deliveries.map(\.id))
        }
        #expect(clock.sleeps == [.milliseconds(100), .milliseconds(200)])
        #expect(await deadLetters.entries.isEmpty)
        #expect(metrics.counter("matchcast_webhook_requests_total", [("outcome", "server_error")]) == 2)
        #expect(metrics.counter("matchcast_webhook_requests_total", [("outcome", "delivered")]) == 1)
        #expect(metrics.counter("matchcast_deliveries_total", [("sink", "webhook"), ("outcome", "delivered")]) == 3)
    }

    @Test func honoursRetryAfterOn429() async throws {
        let deliveries = F.deliveries(2)
        let clock = ManualClock()
        try await Self.withReceiver { receiver, client in
            receiver.fail(next: 1, with: .tooManyRequests)
            let sink = try F.sink(url: receiver.url, client: client, clock: clock)
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { try await sink.deliver(deliveries) }
                await clock.waitForSleepers(count: 1)
                let deadline = try #require(clock.nextDeadline)
                // The backoff alone would be 100 ms; `Retry-After: 1` asks for a second.
                #expect(deadline.offset >= .seconds(1))
                #expect(receiver.requests == 1)
                clock.advance(to: deadline)
                try await group.waitForAll()
            }
            #expect(receiver.log.map(\.status) == [429, 200])
            #expect(Set(receiver.log.compactMap(\.webhookID)).count == 1)
            #expect(receiver.received.map(\.id) == deliveries.map(\.id))
        }
    }

    @Test func badRequestBecomesDeadLettersWithoutRetry() async throws {
        let deliveries = F.deliveries(1200)
        let clock = InstantClock()
        let metrics = RecordingMetrics()
        let deadLetters = InMemoryDeadLetters()
        let captured = CapturedLog()
        try await Self.withReceiver { receiver, client in
            receiver.fail(next: 1, with: .badRequest)
            let sink = try WebhookSink(
                configuration: WebhookSinkConfiguration(url: receiver.url, secret: F.secret, maxConcurrentRequests: 1),
                client: client, deadLetters: deadLetters, clock: clock, metricsFactory: metrics, logger: captured.logger)
            try await sink.deliver(deliveries)

            #expect(receiver.log.map(\.status) == [400, 200, 200])
            #expect(receiver.received.map(\.id) == deliveries[500...].map(\.id))
        }
        let entries = await deadLetters.entries
        #expect(entries.count == 1)
        #expect(entries.first?.status == 400)
        #expect(entries.first?.body.contains("injected 400") == true)
        #expect(await deadLetters.deliveries == Array(deliveries[..<500]))
        #expect(clock.sleeps.isEmpty)
        #expect(metrics.counter("matchcast_webhook_requests_total", [("outcome", "rejected")]) == 1)
        #expect(metrics.counter("matchcast_deliveries_total", [("sink", "webhook"), ("outcome", "dead_letter")]) == 500)
        #expect(metrics.counter("matchcast_deliveries_total", [("sink", "webhook"), ("outcome", "delivered")]) == 700)

        // Logs say what happened without whole tokens, the secret, or the URL's path.
        let lines = captured.all
        #expect(lines.contains { $0.contains("dead-lettered") && $0.contains(deliveries[0].target.redacted) })
        for line in lines {
            #expect(!line.contains(deliveries[0].target.value), "\(line)")
            #expect(!line.contains(F.secret.encoded.dropFirst(6).prefix(12)), "\(line)")
            #expect(!line.contains("/webhook"), "\(line)")
        }
    }

    @Test func deliversOnceTheEndpointIsBack() async throws {
        let deliveries = F.deliveries(4)
        let clock = InstantClock()
        let metrics = RecordingMetrics()
        try await Self.withReceiver { receiver, client in
            receiver.fail(next: 2, with: .down)
            let sink = try F.sink(url: receiver.url, client: client, clock: clock, metrics: metrics)
            try await sink.deliver(deliveries)

            #expect(receiver.log.map(\.status) == [nil, nil, 200])
            #expect(Set(receiver.log.compactMap(\.webhookID)) == [WebhookBatch.id(for: deliveries)])
            #expect(receiver.received.map(\.id) == deliveries.map(\.id))
        }
        #expect(clock.sleeps.count == 2)
        #expect(metrics.counter("matchcast_webhook_requests_total", [("outcome", "connection_error")]) == 2)
    }

    @Test func throwsWhenRetriesAreExhausted() async throws {
        let deliveries = F.deliveries(5)
        let clock = InstantClock()
        let metrics = RecordingMetrics()
        let deadLetters = InMemoryDeadLetters()
        try await Self.withReceiver { receiver, client in
            receiver.fail(next: 100, with: .unavailable)
            let sink = try F.sink(
                url: receiver.url, client: client, clock: clock, deadLetters: deadLetters, metrics: metrics,
                retry: RetryPolicy(maxAttempts: 3, initialBackoff: .milliseconds(100), jitter: 0))
            let error = await #expect(throws: WebhookError.self) { try await sink.deliver(deliveries) }
            #expect(error?.reason == "retries_exhausted")
            #expect(error?.undelivered == deliveries)
            #expect(error?.description.contains("HTTP 503") == true)
            #expect(receiver.requests == 3)
            #expect(receiver.received.isEmpty)
        }
        #expect(clock.sleeps == [.milliseconds(100), .milliseconds(200)])
        #expect(await deadLetters.entries.isEmpty)
        #expect(metrics.counter("matchcast_deliveries_total", [("sink", "webhook"), ("outcome", "failed")]) == 5)
    }

    @Test func givingUpOnOneRequestStartsNoMore() async throws {
        let deliveries = F.deliveries(1200)
        try await Self.withReceiver { receiver, client in
            receiver.fail(next: 100, with: .unavailable)
            let sink = try F.sink(
                url: receiver.url, client: client, clock: InstantClock(), maxConcurrentRequests: 1,
                retry: RetryPolicy(maxAttempts: 2, initialBackoff: .milliseconds(10), jitter: 0))
            let error = await #expect(throws: WebhookError.self) { try await sink.deliver(deliveries) }
            #expect(error?.undelivered == deliveries)
            #expect(receiver.requests == 2)
        }
    }

    @Test func totalDeadlineEndsRetriesEarly() async throws {
        let clock = InstantClock()
        try await Self.withReceiver { receiver, client in
            receiver.fail(next: 100, with: .unavailable)
            let sink = try F.sink(
                url: receiver.url, client: client, clock: clock,
                retry: RetryPolicy(maxAttempts: 8, totalDeadline: .milliseconds(2500), initialBackoff: .seconds(1), jitter: 0))
            await #expect(throws: WebhookError.self) { try await sink.deliver(F.deliveries(1)) }
            // 1 s fits in 2.5 s; another 2 s would not.
            #expect(receiver.requests == 2)
        }
        #expect(clock.sleeps == [.seconds(1)])
    }

    @Test func refusedConnectionsAreRetriedThenThrow() async throws {
        // A port held without a listener: refused, and no other test's server can take it meanwhile.
        let refusing = try ReservedPort()
        let url = "http://127.0.0.1:\(refusing.port)/hook"
        let clock = InstantClock()
        let metrics = RecordingMetrics()
        try await F.withClient(connectTimeout: .milliseconds(200)) { client in
            let sink = try F.sink(
                url: url, client: client, clock: clock, metrics: metrics,
                retry: RetryPolicy(maxAttempts: 3, initialBackoff: .milliseconds(10), jitter: 0))
            let error = await #expect(throws: WebhookError.self) { try await sink.deliver(F.deliveries(2)) }
            #expect(error?.undelivered.count == 2)
        }
        #expect(clock.sleeps.count == 2)
        // Three attempts failed without an answer; on a loaded machine the 200 ms connect deadline may
        // classify one as a timeout rather than a refusal.
        let refused = metrics.counter("matchcast_webhook_requests_total", [("outcome", "connection_error")])
        let timedOut = metrics.counter("matchcast_webhook_requests_total", [("outcome", "timeout")])
        #expect(refused + timedOut == 3)
        withExtendedLifetime(refusing) {}
    }

    @Test func cancellationStopsRetrying() async throws {
        let clock = ManualClock()
        try await Self.withReceiver { receiver, client in
            receiver.fail(next: 100, with: .unavailable)
            let sink = try F.sink(url: receiver.url, client: client, clock: clock)
            let task = Task { try await sink.deliver(F.deliveries(1)) }
            await clock.waitForSleepers(count: 1)
            task.cancel()
            await #expect(throws: CancellationError.self) { try await task.value }
            #expect(receiver.requests == 1)
        }
    }

    @Test func anEmptyBatchSendsNothing() async throws {
        try await Self.withReceiver { receiver, client in
            try await F.sink(url: receiver.url, client: client, clock: InstantClock()).deliver([])
            #expect(receiver.requests == 0)
        }
    }

    @Test(arguments: ["", "not a url", "ftp://example.com/hook", "http:///hook", "/relative/hook"])
    func refusesBadURLs(url: String) async throws {
        try await F.withClient { client in
            let error = #expect(throws: WebhookError.self) {
                try F.sink(url: url, client: client, clock: InstantClock())
            }
            #expect(error?.reason == "config")
        }
    }

    @Test func refusesLimitsThatAreNotPositive() async throws {
        try await F.withClient { client in
            for (batch, width) in [(0, 4), (500, 0)] {
                #expect(throws: WebhookError.self) {
                    try F.sink(url: "http://127.0.0.1:9/hook", client: client, clock: InstantClock(), maxBatch: batch,
                               maxConcurrentRequests: width)
                }
            }
            #expect(throws: WebhookError.self) {
                try F.sink(url: "http://127.0.0.1:9/hook", client: client, clock: InstantClock(),
                           retry: RetryPolicy(maxAttempts: 0))
            }
        }
    }
}
