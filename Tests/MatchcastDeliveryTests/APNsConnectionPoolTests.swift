import Foundation
import MatchcastCore
import MatchcastDelivery
import MatchcastTesting
import Testing

/// The APNs sink's HTTP/2 connections against misbehaving fakes: deadlines (a server that never
/// answers, one that never finishes TLS, one with an untrusted certificate), error bodies split
/// over DATA frames, no re-send of an answered request, one re-send on another connection when a
/// connection dies first, and the pool growing under load up to its bound.
/// Serialized: the deadline tests need the event loops not starved by a neighbour.
@Suite("APNs connection pool", .serialized, .timeLimit(.minutes(2)))
struct APNsConnectionPoolTests {
    private typealias F = APNsFixture

    @Test func aServerThatNeverAnswersFailsEachAttemptAtTheDeadline() async throws {
        let (key, _) = try F.credentials()
        let metrics = RecordingMetrics()
        let deliveries = F.deliveries(3)
        let started = ContinuousClock.now
        try await F.withServer(key: key) { server, client in
            server.stopAnswering()
            let sink = try F.sink(
                server: server, client: client, key: key, metrics: metrics,
                retry: RetryPolicy(maxAttempts: 2, initialBackoff: .milliseconds(10), jitter: 0),
                requestTimeout: .milliseconds(500))
            defer { sink.shutdown() }
            do {
                try await sink.deliver(deliveries)
                Issue.record("deliver did not throw")
            } catch let error as APNsError {
                #expect(error.reason == "retries_exhausted")
                #expect(Set(error.undelivered) == Set(deliveries))
            }
            #expect(server.requestCount >= 3)
            #expect(server.log.isEmpty, "nothing was answered")
            #expect(!sink.isHealthy)
            #expect(sink.lastConnectError?.contains("stopped answering") == true)
        }
        let timeouts = metrics.counter("matchcast_apns_request_errors_total", [("kind", "timeout")])
        let closed = metrics.counter("matchcast_apns_request_errors_total", [("kind", "connection_error")])
        // Two attempts each, every one failed and counted; the deadline is what ended them.
        #expect(timeouts + closed == 6)
        #expect(timeouts >= 3)
        #expect((metrics.counter("matchcast_apns_connection_errors_total", [("kind", "stalled")])) >= 1)
        #expect(metrics.counter("matchcast_deliveries_total", [("sink", "apns"), ("outcome", "failed")]) == 3)
        #expect(ContinuousClock.now - started < .seconds(30))
    }

    @Test func aServerThatNeverFinishesTLSFailsTheSetUpAtItsDeadline() async throws {
        let (key, _) = try F.credentials()
        let metrics = RecordingMetrics()
        let silent = try await SilentTCPServer.start()
        let started = ContinuousClock.now
        try await F.withServer(key: key) { server, client in
            let sink = try F.sink(
                server: server, client: client, key: key, metrics: metrics,
                retry: RetryPolicy(maxAttempts: 2, initialBackoff: .milliseconds(10), jitter: 0),
                connectTimeout: .milliseconds(500), endpoint: silent.url)
            defer { sink.shutdown() }
            await #expect(throws: APNsError.self) { try await sink.deliver(F.deliveries(2)) }
            #expect(silent.connections >= 1)
            #expect(!sink.isHealthy)
            #expect(sink.lastConnectError?.contains("set-up") == true)
        }
        await silent.stop()
        #expect((metrics.counter("matchcast_apns_connection_errors_total", [("kind", "connect_timeout")])) >= 1)
        #expect((metrics.counter("matchcast_apns_request_errors_total", [("kind", "timeout")])) == 4)
        #expect(ContinuousClock.now - started < .seconds(30))
    }

    @Test func anUntrustedCertificateFailsTheSetUpFastAndIsReported() async throws {
        let (key, _) = try F.credentials()
        let metrics = RecordingMetrics()
        let stranger = try TestCertificates.make()
        var took = Duration.zero
        try await F.withServer(key: key) { server, client in
            let sink = try F.sink(
                server: server, client: client, key: key, trustRoots: .pem(stranger.caPEM), metrics: metrics,
                retry: RetryPolicy(maxAttempts: 3, initialBackoff: .milliseconds(10), jitter: 0),
                requestTimeout: .seconds(60), connectTimeout: .seconds(60))
            defer { sink.shutdown() }
            #expect(sink.isHealthy, "healthy until a set-up failed")
            let started = ContinuousClock.now
            await #expect(throws: APNsError.self) { try await sink.deliver(F.deliveries(5)) }
            took = ContinuousClock.now - started
            #expect(server.requestCount == 0)
            #expect(!sink.isHealthy)
            #expect(sink.lastConnectError?.contains("TLS") == true)
            #expect(sink.connectionStatus.failedSetups >= 1)
            #expect(sink.connectionStatus.opened == 0)
        }
        #expect((metrics.counter("matchcast_apns_connection_errors_total", [("kind", "tls")])) >= 1)
        #expect(metrics.counter("matchcast_deliveries_total", [("sink", "apns"), ("outcome", "failed")]) == 5)
        // A TLS failure is not waited out: three attempts end well inside one 60 s set-up deadline, however loaded
        // the machine.
        #expect(took < .seconds(30), "three failed set-ups took \(took)")
    }

    @Test func errorBodiesSplitOverSeveralDataFramesAreReadWhole() async throws {
        let (key, _) = try F.credentials()
        let invalid = InvalidTokens()
        let deadLetters = InMemoryDeadLetters()
        let bad = F.deliveries(1, prefix: "bad_", priority: 7)[0]
        // Enough error answers to use up the client's 64 KiB connection window.
        let deliveries = F.deliveries(2500)
        try await F.withServer(key: key) { server, client in
            server.splitErrorBodies(into: 7)
            for index in 0..<2500 {
                server.fail(token: F.token(index), with: index % 2 == 0 ? .unregistered : .deviceTokenNotForTopic)
            }
            // One connection, so that its receive window has to be handed back (about 110 KB of error bodies).
            let sink = try F.sink(
                server: server, client: client, key: key, invalidTokens: invalid, deadLetters: deadLetters, maxConnections: 1)
            defer { sink.shutdown() }
            try await sink.deliver(deliveries)
            try await sink.deliver([bad])
            #expect(sink.connectionStatus.resent == 0)
            #expect(server.requestCount == 2501)
            #expect(server.duplicates == 0)
            #expect(server.connectionsAccepted == 1)
        }
        let reports = await invalid.reports
        #expect(reports.count == 2500)
        let reasons = Dictionary(reports.map { ($0.token, $0.reason) }, uniquingKeysWith: { first, _ in first })
        for index in [0, 1, 2, 2499] {
            #expect(reasons[F.token(index)] == (index % 2 == 0 ? "Unregistered" : "DeviceTokenNotForTopic"))
        }
        let entries = await deadLetters.entries
        #expect(entries.map(\.body) == [#"{"reason":"BadPriority"}"#])
    }

    @Test func anAnsweredRequestIsNeverSentAgain() async throws {
        let (key, _) = try F.credentials()
        let clock = InstantClock()
        let deliveries = F.deliveries(2000)
        try await F.withServer(key: key) { server, client in
            for index in stride(from: 0, to: 2000, by: 10) { server.fail(token: F.token(index), with: .unregistered) }
            for index in stride(from: 5, to: 2000, by: 100) { server.fail(token: F.token(index), next: 1, with: .tooManyRequests) }
            server.splitErrorBodies(into: 3)
            let sink = try F.sink(server: server, client: client, key: key, clock: clock)
            defer { sink.shutdown() }
            try await sink.deliver(deliveries)
            #expect(server.duplicates == 0)
            #expect(server.acceptedCount == 1800)
            for (index, delivery) in deliveries.enumerated() {
                let expected = index % 100 == 5 ? 2 : 1
                #expect(server.requestCount(apnsID: APNsNotificationID.uuid(forDeliveryId: delivery.id)) == expected)
            }
        }
        #expect(clock.sleeps == [.milliseconds(100)])
    }

    @Test func aRequestWhoseConnectionDiedUnansweredIsSentOnceMoreOnAnotherConnection() async throws {
        let (key, _) = try F.credentials()
        let deliveries = F.deliveries(10)
        let victim = F.token(3)
        let id = APNsNotificationID.uuid(forDeliveryId: deliveries[3].id)
        try await F.withServer(key: key) { server, client in
            server.dropConnection(onRequestFor: victim)
            let sink = try F.sink(server: server, client: client, key: key)
            defer { sink.shutdown() }
            try await sink.deliver(deliveries)

            let attempts = server.log.filter { $0.apnsID == id }
            #expect(attempts.map(\.status) == [0, 200])
            #expect(attempts.count == 2 && attempts[0].connection != attempts[1].connection)
            #expect(Set(server.accepted.map(\.token)) == Set(deliveries.map(\.target.value)))
            #expect(server.accepted.count == 10)
            #expect(server.duplicates == 0)
            #expect(sink.connectionStatus.resent >= 1)
            #expect(server.connectionsAccepted == 2)
        }
    }

    @Test func aRequestWhoseConnectionDiesTwiceFailsAsAConnectionError() async throws {
        let (key, _) = try F.credentials()
        let metrics = RecordingMetrics()
        let deliveries = F.deliveries(1)
        try await F.withServer(key: key) { server, client in
            server.dropConnection(onRequestFor: F.token(0), times: 2)
            let sink = try F.sink(
                server: server, client: client, key: key, metrics: metrics,
                retry: RetryPolicy(maxAttempts: 1, initialBackoff: .milliseconds(10), jitter: 0))
            defer { sink.shutdown() }
            await #expect(throws: APNsError.self) { try await sink.deliver(deliveries) }
            #expect(server.log.map(\.status) == [0, 0])
            #expect(Set(server.log.map(\.connection)).count == 2)
        }
        #expect(metrics.counter("matchcast_apns_request_errors_total", [("kind", "connection_error")]) == 1)
    }

    @Test func connectionsAreAddedUnderLoadUpToTheBound() async throws {
        let (key, _) = try F.credentials()
        let deliveries = F.deliveries(40)
        try await F.withServer(key: key, maxConcurrentStreams: 5) { server, client in
            let sink = try F.sink(server: server, client: client, key: key, maxConnections: 3)
            defer { sink.shutdown() }
            server.stopAnswering()
            let sending = Task { try await sink.deliver(deliveries) }
            // Three connections of five streams each: fifteen requests, then the bound stops it.
            await server.waitForRequests(15)
            #expect(server.connectionsAccepted == 3)
            #expect(server.peakConcurrentStreams <= 5)
            server.resumeAnswering()
            try await sending.value
            #expect(server.accepted.count == 40)
            #expect(server.connectionsAccepted == 3)
            #expect(server.peakConcurrentStreams <= 5)
            #expect(sink.connectionStatus.peakOpen == 3)
            // Each connection kept the server's limit in flight.
            #expect(sink.connectionStatus.peakInFlight == 5)
            // One provider-token check per connection, not per request.
            #expect(server.providerTokenVerifications <= 3)
        }
    }
}
