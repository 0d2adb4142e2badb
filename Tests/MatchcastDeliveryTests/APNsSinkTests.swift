import AsyncHTTPClient
import Foundation
import MatchcastCore
import MatchcastDelivery
import MatchcastTesting
import Testing

/// The APNs sink against a fake APNs over TLS + HTTP/2 on a loopback port: headers, provider tokens,
/// answers, retries. Retry sleeps go through an instant clock, so nothing here waits for real.
/// Serialized: the thousand-request test keeps the shared event loops busy, and the others assert
/// exact retry sequences that a starved handshake would disturb.
@Suite("APNs sink", .serialized, .timeLimit(.minutes(1)))
struct APNsSinkTests {
    private typealias F = APNsFixture

    private static func statuses(_ server: FakeAPNsServer, token: String) -> [Int] {
        server.log.filter { $0.token == token }.map(\.status)
    }

    @Test func thousandDeliveriesToThousandTokensAreAllAcceptedWithTheRightHeaders() async throws {
        let (key, _) = try F.credentials()
        let deliveries = F.deliveries(1000)
        let metrics = RecordingMetrics()
        let invalid = InvalidTokens()
        try await F.withServer(key: key) { server, client in
            let sink = try F.sink(server: server, client: client, key: key, invalidTokens: invalid, metrics: metrics)
            #expect(sink.name == "apns" && sink.countsDeliveries)
            try await sink.deliver(deliveries)

            let accepted = server.accepted
            #expect(accepted.count == 1000)
            #expect(server.log.allSatisfy { $0.status == 200 })
            #expect(Set(accepted.map(\.token)) == Set(deliveries.map(\.target.value)))
            let byToken = Dictionary(accepted.map { ($0.token, $0) }, uniquingKeysWith: { first, _ in first })  // a duplicate fails the count above, never crashes the run
            for delivery in deliveries {
                let notification = try #require(byToken[delivery.target.value])
                #expect(notification.pushType == "liveactivity")
                #expect(notification.topic == F.topic)
                #expect(notification.priority == 10)
                #expect(notification.expiration == 1_776_784_629)
                #expect(notification.apnsID == APNsNotificationID.uuid(forDeliveryId: delivery.id))
                // The exact payload bytes, the same for every token of the update.
                #expect(notification.body == delivery.payload.bytes)
            }
            // One provider token for all of them.
            #expect(Set(accepted.map(\.providerToken)).count == 1)
            #expect(sink.signer.tokensIssued == 1)
            let decoded = try F.decode(jwt: accepted[0].providerToken)
            #expect(decoded.header["kid"] as? String == F.keyId)
            #expect(decoded.claims["iss"] as? String == F.teamId)
        }
        #expect(await invalid.reports.isEmpty)
        #expect(metrics.counter("matchcast_apns_responses_total", [("status", "200"), ("reason", "none")]) == 1000)
        #expect(metrics.counter("matchcast_deliveries_total", [("sink", "apns"), ("outcome", "delivered")]) == 1000)
    }

    @Test func distinctPayloadsInOneBatchEachReachTheirTokensByteForByte() async throws {
        let (key, _) = try F.credentials()
        let first = F.payload(summary: "MI 87/6 (14.2)", timestamp: 1_776_784_329)
        let second = F.payload(summary: "MI 88/6 (14.3)", timestamp: 1_776_784_339)
        // Token 0 and 1 get both updates, in order; token 2 only the second.
        let deliveries = Array(F.deliveries(2, payload: first, prefix: "a_")) + F.deliveries(3, payload: second, prefix: "b_")
        try await F.withServer(key: key) { server, client in
            let sink = try F.sink(server: server, client: client, key: key)
            try await sink.deliver(deliveries)
            let accepted = server.accepted
            #expect(accepted.count == 5)
            for index in 0..<2 {
                let bodies = accepted.filter { $0.token == F.token(index) }.map(\.body)
                #expect(bodies == [first.bytes, second.bytes])
            }
            #expect(accepted.filter { $0.token == F.token(2) }.map(\.body) == [second.bytes])
        }
    }

    @Test(arguments: [FakeAPNsServer.Failure.unregistered, .badDeviceToken, .deviceTokenNotForTopic])
    func deadTokensAreReportedOnceAndNeverRetried(failure: FakeAPNsServer.Failure) async throws {
        let (key, _) = try F.credentials()
        let clock = InstantClock()
        let metrics = RecordingMetrics()
        let invalid = InvalidTokens()
        let deadLetters = InMemoryDeadLetters()
        var deliveries = F.deliveries(5)
        // A second update to the dead token in the same batch is not sent.
        deliveries.append(F.deliveries(2, prefix: "later_")[1])
        let dead = F.token(1)
        try await F.withServer(key: key) { server, client in
            server.fail(token: dead, with: failure)
            let sink = try F.sink(
                server: server, client: client, key: key, clock: clock, invalidTokens: invalid, deadLetters: deadLetters,
                metrics: metrics)
            try await sink.deliver(deliveries)

            #expect(Self.statuses(server, token: dead) == [failure.status])
            #expect(server.log.first { $0.token == dead }?.reason == failure.reason)
            #expect(Set(server.accepted.map(\.token)) == Set([0, 2, 3, 4].map(F.token)))
            // Each token's last answer is kept for the device diagnostics.
            #expect(sink.answers.last(token: dead)?.status == failure.status)
            #expect(sink.answers.last(token: dead)?.reason == failure.reason)
            #expect(sink.answers.last(token: F.token(0))?.status == 200 && sink.answers.last(token: F.token(0))?.reason == nil)
            #expect(sink.answers.last(token: F.token(99)) == nil, "never sent to")
        }
        let reports = await invalid.reports
        #expect(reports.map(\.token) == [dead])
        #expect(reports.map(\.reason) == [failure.reason])
        #expect(clock.sleeps.isEmpty)
        #expect(await deadLetters.entries.isEmpty)
        #expect(metrics.counter("matchcast_apns_responses_total", [("status", String(failure.status)), ("reason", failure.reason)]) == 1)
        #expect(metrics.counter("matchcast_deliveries_total", [("sink", "apns"), ("outcome", "invalid_token")]) == 2)
        #expect(metrics.counter("matchcast_deliveries_total", [("sink", "apns"), ("outcome", "delivered")]) == 4)
    }

    @Test func throttledTokenIsRetriedLaterThenAccepted() async throws {
        let (key, _) = try F.credentials()
        let clock = InstantClock()
        let metrics = RecordingMetrics()
        let throttled = F.token(2)
        try await F.withServer(key: key) { server, client in
            server.fail(token: throttled, next: 2, with: .tooManyRequests)
            let sink = try F.sink(server: server, client: client, key: key, clock: clock, metrics: metrics)
            try await sink.deliver(F.deliveries(4))

            #expect(Self.statuses(server, token: throttled) == [429, 429, 200])
            #expect(server.accepted.count == 4)
            // The same notification each time.
            #expect(Set(server.log.filter { $0.token == throttled }.compactMap(\.apnsID)).count == 1)
            #expect(sink.answers.last(token: throttled)?.status == 200, "the last answer, not the first")
        }
        // Backed off 100 ms, then 200 ms: later, not at once.
        #expect(clock.sleeps == [.milliseconds(100), .milliseconds(200)])
        #expect(metrics.counter("matchcast_apns_responses_total", [("status", "429"), ("reason", "TooManyRequests")]) == 2)
        #expect(metrics.counter("matchcast_deliveries_total", [("sink", "apns"), ("outcome", "delivered")]) == 4)
    }

    @Test func expiredProviderTokenGetsANewTokenAndAnImmediateRetry() async throws {
        let (key, _) = try F.credentials()
        let clock = InstantClock()
        let wall = WallClock()
        try await F.withServer(key: key) { server, client in
            let sink = try F.sink(server: server, client: client, key: key, clock: clock, wallClock: wall)
            try await sink.deliver(F.deliveries(3))
            let firstToken = try #require(server.accepted.first?.providerToken)
            #expect(sink.signer.tokensIssued == 1)

            // Five minutes on (well under the refresh interval) APNs calls that token expired.
            server.expireProviderTokensSeenSoFar()
            wall.advance(seconds: 300)
            try await sink.deliver(F.deliveries(3, prefix: "next_"))

            let second = server.log.suffix(from: 3)
            #expect(second.filter { $0.status == 403 }.allSatisfy { $0.reason == "ExpiredProviderToken" && $0.providerToken == firstToken })
            #expect(second.filter { $0.status == 403 }.count >= 1)
            let retried = server.accepted.suffix(3)
            #expect(retried.count == 3)
            #expect(retried.allSatisfy { $0.providerToken != firstToken })
            #expect(Set(retried.map(\.providerToken)).count == 1)
            let issued = try #require(retried.first?.issuedAt)
            #expect(issued == Int64(wall.now().timeIntervalSince1970))
            // Refreshed once, however many requests were refused with the old token.
            #expect(sink.signer.tokensIssued == 2)
        }
        #expect(clock.sleeps.isEmpty)
    }

    @Test func serverErrorsAreRetriedWithBackoff() async throws {
        let (key, _) = try F.credentials()
        let clock = InstantClock()
        let metrics = RecordingMetrics()
        try await F.withServer(key: key) { server, client in
            // Trust given as a CA file this time, as `--apns-ca-file` does.
            let caFile = try server.certificates.writeCAFile()
            defer { try? FileManager.default.removeItem(atPath: caFile) }
            server.fail(next: 1, with: .internalServerError)
            server.fail(next: 1, with: .serviceUnavailable)
            let sink = try F.sink(server: server, client: client, key: key, trustRoots: .file(caFile), clock: clock, metrics: metrics)
            try await sink.deliver(F.deliveries(1))
            #expect(Self.statuses(server, token: F.token(0)) == [500, 503, 200])
            #expect(server.accepted.count == 1)
        }
        #expect(clock.sleeps == [.milliseconds(100), .milliseconds(200)])
        #expect(metrics.counter("matchcast_apns_responses_total", [("status", "500"), ("reason", "InternalServerError")]) == 1)
        #expect(metrics.counter("matchcast_apns_responses_total", [("status", "503"), ("reason", "ServiceUnavailable")]) == 1)
    }

    @Test func aTokenThatKeepsFailingIsHandedBackUndelivered() async throws {
        let (key, _) = try F.credentials()
        let clock = InstantClock()
        let metrics = RecordingMetrics()
        let deliveries = F.deliveries(3)
        try await F.withServer(key: key) { server, client in
            server.fail(token: F.token(1), with: .serviceUnavailable)
            let sink = try F.sink(
                server: server, client: client, key: key, clock: clock, metrics: metrics,
                retry: RetryPolicy(maxAttempts: 3, initialBackoff: .milliseconds(100), jitter: 0))
            do throws(APNsError) {
                try await Self.deliver(deliveries, with: sink)
                Issue.record("deliver did not throw")
            } catch {
                #expect(error.reason == "retries_exhausted")
                #expect(error.undelivered == [deliveries[1]])
                #expect(!error.description.contains(F.token(1)))
            }
            #expect(Self.statuses(server, token: F.token(1)) == [503, 503, 503])
        }
        #expect(metrics.counter("matchcast_deliveries_total", [("sink", "apns"), ("outcome", "failed")]) == 1)
        #expect(metrics.counter("matchcast_deliveries_total", [("sink", "apns"), ("outcome", "delivered")]) == 2)
    }

    @Test func otherRefusalsAreDeadLetteredNotRetried() async throws {
        let (key, _) = try F.credentials()
        let clock = InstantClock()
        let deadLetters = InMemoryDeadLetters()
        let metrics = RecordingMetrics()
        // APNs knows only priorities 1, 5 and 10.
        let bad = F.deliveries(1, prefix: "bad_", priority: 7)[0]
        try await F.withServer(key: key) { server, client in
            let sink = try F.sink(server: server, client: client, key: key, clock: clock, deadLetters: deadLetters, metrics: metrics)
            try await sink.deliver([bad])
            #expect(server.log.map(\.status) == [400])
        }
        let entries = await deadLetters.entries
        #expect(entries.map(\.deliveries) == [[bad]])
        #expect(entries.first?.status == 400)
        #expect(entries.first?.body.contains("BadPriority") == true)
        #expect(clock.sleeps.isEmpty)
        #expect(metrics.counter("matchcast_deliveries_total", [("sink", "apns"), ("outcome", "dead_letter")]) == 1)
    }

    @Test func anUntrustedCertificateFailsWithinTheDeadline() async throws {
        let (key, _) = try F.credentials()
        let deliveries = F.deliveries(2)
        let started = ContinuousClock.now
        try await F.withServer(key: key) { server, client in
            // The client trusts only the system roots, which never signed the throwaway CA.
            let sink = try F.sink(
                server: server, client: client, key: key, trustRoots: .system,
                retry: RetryPolicy(maxAttempts: 2, initialBackoff: .milliseconds(10), jitter: 0),
                requestTimeout: .seconds(3))
            do throws(APNsError) {
                try await Self.deliver(deliveries, with: sink)
                Issue.record("deliver did not throw")
            } catch {
                #expect(error.reason == "retries_exhausted")
                #expect(Set(error.undelivered) == Set(deliveries))
            }
            #expect(server.log.isEmpty)
        }
        #expect(ContinuousClock.now - started < .seconds(20))
    }

    /// A channel delivery goes to the broadcast path (this fake knows no such channel: dead-lettered); a malformed
    /// token is settled without any request; only the good device push reaches the device route.
    @Test func unknownChannelsAreDeadLetteredAndMalformedTokensAreNeverSent() async throws {
        let (key, _) = try F.credentials()
        let invalid = InvalidTokens()
        let deadLetters = InMemoryDeadLetters()
        let metrics = RecordingMetrics()
        var channel = F.deliveries(1, prefix: "chan_")[0]
        channel.target = PushTarget(kind: .channel, value: "dHJ1ZQ==")
        var malformed = F.deliveries(1, prefix: "bad_")[0]
        malformed.target = PushTarget(kind: .updateToken, value: "../../4/broadcasts/x")
        let good = F.deliveries(1)[0]
        try await F.withServer(key: key) { server, client in
            let sink = try F.sink(
                server: server, client: client, key: key, invalidTokens: invalid, deadLetters: deadLetters, metrics: metrics)
            try await sink.deliver([channel, malformed, good])
            #expect(server.log.map(\.token) == [good.target.value])
        }
        #expect(await invalid.reports.map(\.reason) == ["MalformedToken"])
        #expect(await invalid.tokens == [malformed.target.value])
        #expect(await deadLetters.deliveries == [channel])
        #expect(metrics.counter("matchcast_deliveries_total", [("sink", "apns"), ("outcome", "delivered")]) == 1)
        #expect(metrics.counter("matchcast_deliveries_total", [("sink", "apns"), ("outcome", "invalid_token")]) == 1)
        #expect(metrics.counter("matchcast_deliveries_total", [("sink", "apns"), ("outcome", "dead_letter")]) == 1)
    }

    @Test func logsNeverHoldWholeTokensOrCredentials() async throws {
        let (key, _) = try F.credentials()
        let captured = CapturedLog()
        let deliveries = F.deliveries(3)
        var jwt = ""
        try await F.withServer(key: key) { server, client in
            server.fail(token: F.token(0), with: .unregistered)
            server.fail(token: F.token(1), next: 1, with: .tooManyRequests)
            let sink = try F.sink(server: server, client: client, key: key, logger: captured.logger)
            try await sink.deliver(deliveries)
            jwt = server.accepted.first?.providerToken ?? ""
        }
        let lines = captured.all
        #expect(!lines.isEmpty)
        let keyLine = try #require(key.pemRepresentation.split(separator: "\n").dropFirst().first.map(String.init))
        for line in lines {
            for delivery in deliveries { #expect(!line.contains(delivery.target.value)) }
            #expect(!jwt.isEmpty && !line.contains(jwt))
            #expect(!line.contains(keyLine))
        }
    }

    @Test func configurationIsCheckedUpFront() async throws {
        let (key, _) = try F.credentials()
        try await F.withServer(key: key) { server, client in
            func make(_ configuration: APNsSinkConfiguration) throws(APNsError) -> APNsSink {
                try APNsSink(configuration: configuration, client: client, deadLetters: InMemoryDeadLetters(), onInvalidToken: { _, _ in })
            }
            let good = APNsSinkConfiguration(key: .pem(key.pemRepresentation), keyId: F.keyId, teamId: F.teamId)
            #expect(good.resolvedEndpoint == "https://api.push.apple.com")
            var sandbox = good
            sandbox.environment = .sandbox
            #expect(sandbox.resolvedEndpoint == "https://api.sandbox.push.apple.com")
            _ = try make(good)

            var broken = good
            broken.endpoint = "http://127.0.0.1:\(server.port)"
            #expect(throws: APNsError.self) { try make(broken) }
            broken.endpoint = "https://127.0.0.1:\(server.port)/3/device"
            #expect(throws: APNsError.self) { try make(broken) }
            broken = good
            broken.trustRoots = .file("/nonexistent/ca.pem")
            #expect(throws: APNsError.self) { try make(broken) }
            broken.trustRoots = .pem("not a certificate")
            #expect(throws: APNsError.self) { try make(broken) }
            broken = good
            broken.key = .file("/nonexistent/AuthKey.p8")
            do throws(APNsError) {
                _ = try make(broken)
                Issue.record("accepted a missing key file")
            } catch {
                #expect(error.reason == "key" && error.description.contains("/nonexistent/AuthKey.p8"))
            }
            broken = good
            broken.maxConcurrentRequests = 0
            #expect(throws: APNsError.self) { try make(broken) }
        }
    }

    /// `deliver` with its error typed, for `do throws(APNsError)`.
    private static func deliver(_ deliveries: [Delivery], with sink: APNsSink) async throws(APNsError) {
        do {
            try await sink.deliver(deliveries)
        } catch let error as APNsError {
            throw error
        } catch {
            Issue.record("unexpected error \(error)")
        }
    }
}
