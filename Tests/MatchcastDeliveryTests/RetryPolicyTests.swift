import Foundation
import MatchcastCore
import MatchcastTesting
import Testing

@testable import MatchcastDelivery

/// The pure parts of the webhook sink: retry timing, status rules, `Retry-After`, batch ids and bodies.
@Suite("Webhook retry rules and batches", .timeLimit(.minutes(1)))
struct RetryPolicyTests {
    @Test func backoffDoublesUpToTheCapLessJitter() {
        let policy = RetryPolicy(initialBackoff: .milliseconds(500), maxBackoff: .seconds(60), jitter: 0.2)
        #expect((1...9).map { policy.backoff(afterAttempt: $0, random: 0) } == [
            .milliseconds(500), .seconds(1), .seconds(2), .seconds(4), .seconds(8), .seconds(16), .seconds(32),
            .seconds(60), .seconds(60),
        ])
        let halfJitter = policy.backoff(afterAttempt: 3, random: 0.5)
        #expect(halfJitter > .milliseconds(1799) && halfJitter < .milliseconds(1801))
        #expect(policy.backoff(afterAttempt: 3, random: 0.999_999) > .milliseconds(1599))
        #expect(policy.backoff(afterAttempt: 500, random: 0) == .seconds(60))
    }

    @Test func delayStopsAtMaxAttemptsAndTheTotalDeadline() {
        let policy = RetryPolicy(maxAttempts: 3, totalDeadline: .seconds(10), initialBackoff: .seconds(1), jitter: 0)
        #expect(policy.delay(afterAttempt: 1, retryAfter: nil, elapsed: .zero, random: 0) == .seconds(1))
        #expect(policy.delay(afterAttempt: 2, retryAfter: nil, elapsed: .seconds(1), random: 0) == .seconds(2))
        #expect(policy.delay(afterAttempt: 3, retryAfter: nil, elapsed: .seconds(3), random: 0) == nil)
        #expect(policy.delay(afterAttempt: 2, retryAfter: nil, elapsed: .milliseconds(8001), random: 0) == nil)
        #expect(policy.delay(afterAttempt: 2, retryAfter: nil, elapsed: .seconds(8), random: 0) == .seconds(2))
    }

    @Test func retryAfterIsAFloorAndIsCapped() {
        let policy = RetryPolicy(totalDeadline: .seconds(600), initialBackoff: .milliseconds(100), jitter: 0,
                                        maxRetryAfter: .seconds(120))
        #expect(policy.delay(afterAttempt: 1, retryAfter: .seconds(1), elapsed: .zero, random: 0) == .seconds(1))
        #expect(policy.delay(afterAttempt: 1, retryAfter: .zero, elapsed: .zero, random: 0) == .milliseconds(100))
        #expect(policy.delay(afterAttempt: 1, retryAfter: .seconds(3600), elapsed: .zero, random: 0) == .seconds(120))
        // A wait the deadline cannot hold is giving up, not retrying early.
        #expect(policy.delay(afterAttempt: 1, retryAfter: .seconds(100), elapsed: .seconds(550), random: 0) == nil)
    }

    @Test func readsRetryAfterSecondsAndDates() {
        let now = Date(timeIntervalSince1970: 784_111_777)  // Sun, 06 Nov 1994 08:49:37 GMT
        #expect(RetryPolicy.retryAfter("1", now: now) == .seconds(1))
        #expect(RetryPolicy.retryAfter(" 120 ", now: now) == .seconds(120))
        #expect(RetryPolicy.retryAfter("0", now: now) == .zero)
        #expect(RetryPolicy.retryAfter("Sun, 06 Nov 1994 08:50:07 GMT", now: now) == .seconds(30))
        #expect(RetryPolicy.retryAfter("Sunday, 06-Nov-94 08:50:07 GMT", now: now) == .seconds(30))
        #expect(RetryPolicy.retryAfter("Sun Nov  6 08:50:07 1994", now: now) == .seconds(30))
        #expect(RetryPolicy.retryAfter("Sun, 06 Nov 1994 08:00:00 GMT", now: now) == .zero)
        for bad in [nil, "", "soon", "-1", "1.5", "Sun, 06 Nov 1994"] as [String?] {
            #expect(RetryPolicy.retryAfter(bad, now: now) == nil, "\(bad ?? "nil")")
        }
        #expect(RetryPolicy.retryAfter("99999999999999999999", now: now) != nil)
    }

    @Test(arguments: [
        (200, "delivered"), (202, "delivered"), (204, "delivered"),
        (429, "throttled"), (500, "server_error"), (502, "server_error"), (503, "server_error"), (504, "server_error"),
        (400, "rejected"), (401, "rejected"), (404, "rejected"), (408, "rejected"), (410, "rejected"), (422, "rejected"),
        (301, "rejected"), (304, "rejected"),
    ])
    func classifiesStatuses(status: Int, outcome: String) {
        #expect(WebhookAttempt.outcome(status: status).rawValue == outcome)
    }

    @Test func classifiesFailuresWithoutAStatus() {
        #expect(WebhookAttempt.outcome(error: WebhookAttempt.RequestTimedOut()) == .timeout)
        #expect(WebhookAttempt.outcome(error: URLError(.cannotConnectToHost)) == .connectionError)
        #expect(WebhookAttempt.Outcome.allCases.filter(\.isRetryable) == [.throttled, .serverError, .timeout, .connectionError])
    }

    @Test func batchIdsAreStableAndFollowTheDeliveries() {
        let deliveries = WebhookFixture.deliveries(5)
        let id = WebhookBatch.id(for: deliveries)
        #expect(id == WebhookBatch(deliveries).id)
        #expect(id == WebhookBatch.id(for: WebhookFixture.deliveries(5)))
        #expect(id.hasPrefix("msg_"))
        #expect(id.count == 30)
        #expect(id.dropFirst(4).allSatisfy { "0123456789abcdef".contains($0) })
        #expect(WebhookBatch.id(for: deliveries.reversed()) != id)
        #expect(WebhookBatch.id(for: deliveries.prefix(4)) != id)
        var ab = deliveries[0], c = deliveries[1], a = deliveries[0], bc = deliveries[1]
        (ab.id, c.id, a.id, bc.id) = ("ab", "c", "a", "bc")
        #expect(WebhookBatch.id(for: [ab, c]) != WebhookBatch.id(for: [a, bc]))
    }

    @Test func bodyEmbedsEachDeliveryAsWritten() throws {
        let deliveries = WebhookFixture.deliveries(3)
        let body = WebhookBatch.body(for: deliveries)
        let expected = #"{"deliveries":["# + deliveries.map { String(decoding: $0.jsonBytes(), as: UTF8.self) }.joined(separator: ",") + "]}"
        #expect(String(decoding: body, as: UTF8.self) == expected)
        struct Envelope: Decodable { var deliveries: [DeliveryRecord] }
        let records = try JSONDecoder().decode(Envelope.self, from: Data(body)).deliveries
        #expect(records.map(\.id) == deliveries.map(\.id))
        #expect(records.map(\.target) == deliveries.map(\.target))
        #expect(String(decoding: WebhookBatch.body(for: []), as: UTF8.self) == #"{"deliveries":[]}"#)
    }
}
