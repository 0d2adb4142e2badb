import AsyncHTTPClient
import Crypto
import Foundation
import MatchcastCore
import MatchcastDelivery
import MatchcastTesting
import Synchronization
import Testing

/// The Web Push sink against a fake push service on a loopback port that checks VAPID and the RFC 8030 headers and
/// decrypts every push with the browser's key. Retry sleeps go through an injected clock, so nothing waits for real.
@Suite("Web Push sink", .timeLimit(.minutes(1)))
struct WebPushSinkTests {
    private typealias F = WebPushSinkFixture

    @Test func everyPushArrivesDecryptedAsTheDocumentedJSONWithTheRightHeaders() async throws {
        let steps = try F.match("epl-ars-che", updates: 5)
        let metrics = RecordingMetrics()
        try await F.withService { service, subscriber, key, client in
            let sink = try F.sink(subscriber, key: key, client: client, metrics: metrics)
            #expect(sink.name == "webpush" && sink.countsDeliveries)
            for step in steps {
                try await sink.deliver([step.delivery])
                try await sink.flush()
            }
            let pushes = service.delivered
            try #require(pushes.count == steps.count, "\(service.log.map(\.problems))")
            for (push, step) in zip(pushes, steps) {
                #expect(push.problems.isEmpty, "\(push.problems)")
                let message = try #require(push.json)
                // Full names on every push: the start's attributes are kept for the updates, which do not carry them.
                #expect(message["title"] as? String == "Arsenal v Chelsea")
                #expect(message["tag"] as? String == "mc-epl-ars-che")
                let data = try #require(message["data"] as? [String: Any])
                #expect(data["match"] as? String == "epl-ars-che")
                #expect(data["event"] as? String == step.event.rawValue)
                #expect(data["ts"] as? Int == step.timestamp)
                #expect(data["sport"] as? String == "football")
                #expect(message["requireInteraction"] as? Bool == (step.event != .end))
                // RFC 8030: the match's topic, high urgency for a start, an end or a key moment, the TTL to the stale date.
                #expect(push.topic == WebPushMessage.topic(forMatch: "epl-ars-che") && push.topic?.count == 32)
                #expect(push.urgency == (step.event != .update || step.isKeyMoment ? "high" : "normal"), "\(step.event)")
                #expect(push.ttl == (step.event == .end ? "28800" : String(step.timestamp + 900 - F.nowSeconds)))
                #expect(push.contentEncoding == "aes128gcm")
                #expect(push.audience == service.origin && push.subject == F.subject)
            }
            #expect(Set(pushes.compactMap(\.urgency)) == ["high", "normal"], "both urgencies occur")
            #expect(sink.settled == WebPushSink.Settled(delivered: steps.count))
        }
        #expect(metrics.counter("matchcast_deliveries_total", [("sink", "webpush"), ("outcome", "delivered")]) == Int64(steps.count))
        #expect(metrics.counter("matchcast_webpush_requests_total", [("outcome", "accepted")]) == Int64(steps.count))
    }

    @Test func aNewerPushOfAMatchReplacesAWaitingUpdateButNeverItsStartOrEnd() async throws {
        let steps = try F.match("epl-1", updates: 4)
        let metrics = RecordingMetrics()
        try await F.withService { service, subscriber, key, client in
            let sink = try F.sink(subscriber, key: key, client: client, metrics: metrics)
            // Handed over at once: the start goes, each update replaces the one before it, and the end the last.
            try await sink.deliver(steps.map(\.delivery))
            try await sink.flush()
            #expect(service.deliveredMessages.map(F.identity) == [F.identity(steps[0]), F.identity(steps[steps.count - 1])])
            #expect(sink.settled == WebPushSink.Settled(delivered: 2, superseded: 4))
        }
        #expect(metrics.counter("matchcast_deliveries_total", [("sink", "webpush"), ("outcome", "superseded")]) == 4)
    }

    @Test func severalMatchesAtOnceEachInOrderEveryDeliverySettledOnce() async throws {
        let matches = try (0..<4).map { try F.match("m\($0)", updates: 6, startOffset: $0 * 100) }
        let all = matches.flatMap { $0 }
        try await F.withService { service, subscriber, key, client in
            let sink = try F.sink(subscriber, key: key, client: client, maxConcurrentRequests: 3)
            // Interleaved, one delivery per call, as the broker hands them over.
            for index in 0..<matches[0].count {
                for match in matches { try await sink.deliver([match[index].delivery]) }
            }
            try await sink.flush()
            let got = service.deliveredMessages.map(F.identity)
            #expect(Set(got).count == got.count, "no push arrives twice")
            for match in matches {
                let order = match.map(F.identity)
                let arrived = got.filter { order.contains($0) }
                #expect(arrived.first == order.first && arrived.last == order.last, "start and end of \(match[0].delivery.matchId)")
                #expect(arrived == order.filter { arrived.contains($0) }, "in order: \(arrived)")
            }
            let settled = sink.settled
            #expect(settled.delivered == got.count && settled.deadLettered == 0 && settled.total == all.count)
        }
    }

    @Test func honoursRetryAfterOn429() async throws {
        let steps = try F.match("m", updates: 0)
        let clock = InstantClock()
        try await F.withService { service, subscriber, key, client in
            service.script([.tooManyRequests(retryAfter: "7")])
            let sink = try F.sink(subscriber, key: key, client: client, clock: clock)
            try await sink.deliver([steps[0].delivery])
            try await sink.flush()
            #expect(service.log.map(\.status) == [429, 201])
            #expect(service.deliveredMessages.map(F.identity) == [F.identity(steps[0])])
        }
        // The backoff alone would be 100 ms.
        #expect(clock.sleeps == [.seconds(7)])
    }

    @Test func anErrorMixSettlesEveryDeliveryExactlyOnce() async throws {
        let matches = try (0..<3).map { try F.match("mix\($0)", updates: 4, startOffset: $0 * 100) }
        let clock = InstantClock()
        let deadLetters = InMemoryDeadLetters()
        let metrics = RecordingMetrics()
        try await F.withService { service, subscriber, key, client in
            service.script([
                .tooManyRequests(retryAfter: "1"), .serverError(500), .created, .serverError(503), .tooLarge, .serverError(500),
                .serverError(500), .serverError(500), .created, .serverError(502), .tooManyRequests(retryAfter: nil),
            ])
            let sink = try F.sink(
                subscriber, key: key, client: client, clock: clock, deadLetters: deadLetters, metrics: metrics,
                retry: RetryPolicy(maxAttempts: 3, initialBackoff: .milliseconds(100), jitter: 0))
            // One push per match at a time, three matches in flight: nothing is superseded, so every delivery is
            // either at the push service or a dead letter.
            for index in 0..<matches[0].count {
                try await sink.deliver(matches.map { $0[index].delivery })
                try await sink.flush()
            }
            let delivered = service.deliveredMessages.map(F.identity)
            let steps = Dictionary(uniqueKeysWithValues: matches.flatMap { $0 }.map { ($0.delivery.id, $0) })
            let dead = try await deadLetters.deliveries.map { F.identity(try #require(steps[$0.id])) }
            #expect(Set(delivered).count == delivered.count, "delivered twice: \(delivered)")
            #expect(Set(dead).count == dead.count, "dead-lettered twice: \(dead)")
            #expect(Set(delivered).isDisjoint(with: dead))
            #expect(Set(delivered).union(dead) == Set(steps.values.map(F.identity)))
            #expect(sink.settled == WebPushSink.Settled(delivered: delivered.count, deadLettered: dead.count))

            let entries = await deadLetters.entries
            let tooLarge = try #require(entries.first { $0.status == 413 })
            #expect(tooLarge.body.hasPrefix(#"{"error":"payload too large: "#) && tooLarge.body.utf8.count == 200)
            #expect(entries.allSatisfy { $0.status == 413 || $0.body.contains("gave up after 3 attempts") }, "\(entries)")
            #expect(service.log.allSatisfy { $0.problems.isEmpty })
            #expect(metrics.counter("matchcast_deliveries_total", [("sink", "webpush"), ("outcome", "delivered")]) == Int64(delivered.count))
            #expect(metrics.counter("matchcast_deliveries_total", [("sink", "webpush"), ("outcome", "dead_letter")]) == Int64(dead.count))
        }
        #expect(metrics.counter("matchcast_webpush_requests_total", [("outcome", "throttled")]) == 2)
        #expect(metrics.counter("matchcast_webpush_requests_total", [("outcome", "server_error")]) == 6)
        #expect(metrics.counter("matchcast_webpush_requests_total", [("outcome", "too_large")]) == 1)
        // Retry-After: 1 was waited for, not the 0.1 or 0.2 s backoff. The three matches' queues share the clock, and it
        // records a sleep from the moment it is asked, so another queue's sleep just before may shorten the record.
        #expect(clock.sleeps.contains { $0 >= .milliseconds(500) }, "Retry-After: 1 was waited for: \(clock.sleeps)")
    }

    @Test func retriesRunOutIntoADeadLetterWithTheLastAnswer() async throws {
        let steps = try F.match("m", updates: 0)
        let clock = InstantClock()
        let deadLetters = InMemoryDeadLetters()
        try await F.withService { service, subscriber, key, client in
            service.answerAll(.serverError(503))
            let sink = try F.sink(
                subscriber, key: key, client: client, clock: clock, deadLetters: deadLetters,
                retry: RetryPolicy(maxAttempts: 3, initialBackoff: .milliseconds(100), jitter: 0))
            try await sink.deliver([steps[0].delivery])
            try await sink.flush()
            #expect(service.log.map(\.status) == [503, 503, 503])
            #expect(sink.settled == WebPushSink.Settled(deadLettered: 1))
        }
        #expect(clock.sleeps == [.milliseconds(100), .milliseconds(200)])
        let entry = try #require(await deadLetters.entries.first)
        #expect(entry.deliveries == [steps[0].delivery] && entry.status == 503)
        #expect(entry.body.contains("gave up after 3 attempts") && entry.body.contains("injected 503"), "\(entry.body)")
    }

    @Test func aGoneSubscriptionStopsTheSinkAndDeadLettersTheRestWithTheReason() async throws {
        let steps = try F.match("m", updates: 3)
        let deadLetters = InMemoryDeadLetters()
        let metrics = RecordingMetrics()
        try await F.withService { service, subscriber, key, client in
            let sink = try F.sink(subscriber, key: key, client: client, deadLetters: deadLetters, metrics: metrics)
            try await sink.deliver([steps[0].delivery])
            try await sink.flush()
            service.unsubscribe(subscriber)
            try await sink.deliver([steps[1].delivery])
            let gone = await #expect(throws: WebPushSubscriptionGone.self) { try await sink.flush() }
            #expect(gone?.status == 410 && sink.subscriptionGone == gone)
            #expect(gone?.description.contains(service.origin) == true)
            #expect(gone?.description.contains(subscriber.id) == false, "the endpoint's path is the subscription's secret")
            // Nothing more is sent: the rest are dead letters at once.
            try await sink.deliver(steps[2...].map(\.delivery))
            await #expect(throws: WebPushSubscriptionGone.self) { try await sink.flush() }
            #expect(service.log.map(\.status) == [201, 410])
            #expect(sink.settled == WebPushSink.Settled(delivered: 1, deadLettered: steps.count - 1))
        }
        let entries = await deadLetters.entries
        #expect(entries.flatMap(\.deliveries) == steps[1...].map(\.delivery))
        #expect(entries.allSatisfy { $0.status == 410 })
        #expect(entries.first?.body.contains("unsubscribed or expired") == true)
        #expect(entries.dropFirst().allSatisfy { $0.body.contains("the subscription is gone (HTTP 410") }, "\(entries.map(\.body))")
        #expect(metrics.counter("matchcast_webpush_requests_total", [("outcome", "gone")]) == 1)
        #expect(metrics.counter("matchcast_deliveries_total", [("sink", "webpush"), ("outcome", "dead_letter")]) == Int64(steps.count - 1))
    }

    @Test func goneWhileOtherPushesWaitDeadLettersThemAll() async throws {
        let matches = try (0..<3).map { try F.match("g\($0)", updates: 2, startOffset: $0 * 100) }
        let deadLetters = InMemoryDeadLetters()
        try await F.withService { service, subscriber, key, client in
            service.script([.gone(404)])
            // One push at a time: when the first answer says gone, every other push is still waiting.
            let sink = try F.sink(subscriber, key: key, client: client, deadLetters: deadLetters, maxConcurrentRequests: 1)
            try await sink.deliver(matches.flatMap { $0 }.map(\.delivery))
            await #expect(throws: WebPushSubscriptionGone.self) { try await sink.flush() }
            #expect(service.log.map(\.status) == [404])
            let settled = sink.settled
            #expect(settled == WebPushSink.Settled(deadLettered: matches.count * 2, superseded: matches.count * 2))
        }
        let dead = await deadLetters.entries
        #expect(dead.allSatisfy { $0.status == 404 })
        // Per match the start and the end were waiting (the end had replaced the updates).
        #expect(dead.count == matches.count * 2)
    }

    @Test func anUpdateWaitingToBeRetriedGivesWayToANewerOne() async throws {
        let steps = try F.match("m", updates: 3)
        let clock = ManualClock()
        try await F.withService { service, subscriber, key, client in
            let sink = try F.sink(subscriber, key: key, client: client, clock: clock)
            try await sink.deliver([steps[0].delivery])
            try await sink.flush()
            service.script([.serverError(500)])
            try await sink.deliver([steps[1].delivery])
            await clock.waitForSleepers(count: 1)
            // While the first update waits to be retried, two more come: the later replaces the earlier.
            try await sink.deliver([steps[2].delivery])
            try await sink.deliver([steps[3].delivery])
            clock.advance(by: .seconds(1))
            try await sink.flush()
            try await sink.deliver([steps[4].delivery])
            try await sink.flush()
            #expect(service.log.map(\.status) == [201, 500, 201, 201])
            #expect(service.deliveredMessages.map(F.identity) == [steps[0], steps[3], steps[4]].map(F.identity))
            #expect(sink.settled == WebPushSink.Settled(delivered: 3, superseded: 2))
        }
    }

    @Test func unhealthyOnceThePushServiceHasNotAnsweredForAWhile() async throws {
        let steps = try F.match("m", updates: 1)
        let now = Mutex(F.now)
        let metrics = RecordingMetrics()
        let deadLetters = InMemoryDeadLetters()
        try await F.withService { service, subscriber, key, client in
            let sink = try F.sink(
                subscriber, key: key, client: client, deadLetters: deadLetters, metrics: metrics,
                retry: RetryPolicy(maxAttempts: 2, initialBackoff: .milliseconds(10), jitter: 0), now: { now.withLock { $0 } })
            #expect(sink.isHealthy)
            service.answerAll(.drop)
            try await sink.deliver([steps[0].delivery])
            try await sink.flush()
            #expect(sink.isHealthy, "failing, but not for long yet")
            now.withLock { $0 += 61 }
            #expect(!sink.isHealthy)
            service.answerAll(nil)
            try await sink.deliver([steps[1].delivery])
            try await sink.flush()
            #expect(sink.isHealthy)
            #expect(sink.settled == WebPushSink.Settled(delivered: 1, deadLettered: 1))
        }
        #expect(metrics.counter("matchcast_webpush_requests_total", [("outcome", "connection_error")]) == 2)
        let entry = try #require(await deadLetters.entries.first)
        #expect(entry.status == 0 && entry.body.contains("connection error"), "\(entry.body)")
    }

    @Test func aRefusalIsADeadLetterWithItsStatusAndNotRetried() async throws {
        let steps = try F.match("m", updates: 0)
        let clock = InstantClock()
        let deadLetters = InMemoryDeadLetters()
        try await F.withService { service, subscriber, key, client in
            service.script([.badRequest])
            let sink = try F.sink(subscriber, key: key, client: client, clock: clock, deadLetters: deadLetters)
            try await sink.deliver(steps.map(\.delivery))
            try await sink.flush()
            #expect(service.log.map(\.status) == [400, 201])
        }
        #expect(clock.sleeps.isEmpty)
        let entries = await deadLetters.entries
        #expect(entries.map(\.status) == [400] && entries.first?.body.contains("injected 400") == true)
        #expect(entries.first?.deliveries == [steps[0].delivery])
    }

    @Test func pushesSignedWithAnotherKeyAreRefusedByThePushService() async throws {
        let steps = try F.match("m", updates: 0)
        let deadLetters = InMemoryDeadLetters()
        try await F.withService { service, subscriber, _, client in
            // The subscription was made with another application server key.
            let sink = try F.sink(subscriber, key: P256.Signing.PrivateKey(), client: client, deadLetters: deadLetters)
            try await sink.deliver([steps[0].delivery])
            try await sink.flush()
            #expect(service.log.map(\.status) == [403])
            #expect(service.log.first?.problems.first?.contains("not the key this subscription was made with") == true)
        }
        #expect(await deadLetters.entries.map(\.status) == [403])
    }

    @Test func theAttributesOfOnlySoManyMatchesAreKept() async throws {
        let matches = try (0..<3).map { try F.match("a\($0)", updates: 1, startOffset: $0 * 100) }
        try await F.withService { service, subscriber, key, client in
            let subscription = try WebPushMessage.Subscription(json: subscriber.json, now: F.now)
            let sink = try WebPushSink(
                configuration: WebPushSinkConfiguration(
                    recipient: .subscription(subscription), vapid: VAPIDCredentials(privateKey: key, subject: F.subject), rememberedMatches: 2),
                client: client, deadLetters: InMemoryDeadLetters(), clock: InstantClock(), now: { F.now }, logger: F.quiet)
            for match in matches {
                try await sink.deliver([match[0].delivery])
                try await sink.flush()
            }
            for match in matches {
                try await sink.deliver([match[1].delivery])
                try await sink.flush()
            }
            let titles = service.deliveredMessages.dropFirst(3).map { $0["title"] as? String }
            // The first match's start was forgotten when the third started: its update has the short names.
            #expect(titles == ["ARS v CHE", "Arsenal v Chelsea", "Arsenal v Chelsea"])
        }
    }

    @Test func shutdownDeadLettersWhatIsStillWaiting() async throws {
        let steps = try F.match("m", updates: 1)
        let clock = ManualClock()
        let deadLetters = InMemoryDeadLetters()
        try await F.withService { service, subscriber, key, client in
            service.answerAll(.serverError(503))
            let sink = try F.sink(subscriber, key: key, client: client, clock: clock, deadLetters: deadLetters)
            try await sink.deliver(steps.map(\.delivery))
            await clock.waitForSleepers(count: 1)
            sink.shutdown()
            try await sink.flush()
            try await sink.deliver([steps[1].delivery])
            try await sink.flush()
            #expect(sink.settled == WebPushSink.Settled(deadLettered: 1 + 2, superseded: 1))
        }
        let entries = await deadLetters.entries
        #expect(entries.count == 3 && entries.allSatisfy { $0.status == 0 && $0.body.contains("shut down") }, "\(entries)")
    }

    @Test func logsNameTheOriginNeverTheEndpointPathOrKeys() async throws {
        let steps = try F.match("m", updates: 2)
        let captured = CapturedLog()
        try await F.withService { service, subscriber, key, client in
            service.script([.serverError(500), .tooLarge, .badRequest, .gone(410)])
            let sink = try F.sink(subscriber, key: key, client: client, maxConcurrentRequests: 1, logger: captured.logger)
            for step in steps {
                try await sink.deliver([step.delivery])
                try? await sink.flush()
            }
            let lines = captured.all
            #expect(lines.contains { $0.contains("dead-lettered") && $0.contains(service.origin) })
            #expect(lines.contains { $0.contains("subscription is gone") })
            let p256dh = Base64URL.encode(subscriber.key.publicKey.x963Representation)
            let secrets = [subscriber.id, p256dh, Base64URL.encode(subscriber.auth), Base64URL.encode(key.rawRepresentation)]
            for line in lines {
                for secret in secrets { #expect(!line.contains(secret), "\(line)") }
            }
        }
    }
}
