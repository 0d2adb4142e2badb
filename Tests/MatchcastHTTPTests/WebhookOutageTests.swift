import AsyncHTTPClient
import Foundation
import HTTPTypes
import Logging
import MatchcastCore
import MatchcastDelivery
import MatchcastService
import MatchcastStore
import MatchcastTesting
import Testing

/// The webhook sink behind the outbox relay, against a real receiver: refused deliveries become dead letters listed
/// by the admin API; a receiver that is away for a while gets everything, once, when it is back.
@Suite("Webhook: dead letters and a receiver that goes away")
struct WebhookOutageTests {
    private typealias F = WebhookFixture

    @Test func aRefusedBatchIsKeptAndListedByTheAdminCall() async throws {
        let http = HTTPHarness(adminKey: HTTPHarness.adminKey)
        try await WebhookReceiver.with(secret: F.secret) { receiver in
            try await F.withClient { client in
                let letters = StoreDeadLetters(
                    store: http.store, sink: "webhook", now: { Date(timeIntervalSince1970: 1_800_000_100) },
                    logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }))
                let sink = try F.sink(url: receiver.url, client: client, clock: InstantClock(), deadLetters: letters)
                receiver.fail(next: 1, with: .badRequest)
                try await sink.deliver(F.deliveries(3))
            }
        }
        let stored = await http.store.deadLetters(limit: 10)
        #expect(stored.map(\.delivery.id).sorted() == ["dlv_000000", "dlv_000001", "dlv_000002"])
        #expect(stored.allSatisfy { $0.status == 400 && $0.sink == "webhook" && $0.reason.contains("injected 400") })

        try await http.run { client in
            let listed = try await client.call(.get, "/v1/admin/dead-letters?limit=2", bearer: HTTPHarness.adminKey)
            #expect(listed.status == .ok)
            let body = try listed.decode(DeadLetterListing.self)
            #expect(body.deadLetters.count == 2)
            #expect(body.deadLetters.allSatisfy { $0.sink == "webhook" && $0.status == 400 })
            #expect(body.deadLetters.first?.delivery.target.kind == .updateToken)

            #expect(try await client.call(.get, "/v1/admin/dead-letters").status == .unauthorized)
            #expect(try await client.call(.get, "/v1/admin/dead-letters?limit=0", bearer: HTTPHarness.adminKey).status
                == .badRequest)
            #expect(try await client.call(.get, "/v1/admin/dead-letters?limit=ten", bearer: HTTPHarness.adminKey).status
                == .badRequest)
        }
    }

    @Test func aReceiverAwayForAWhileGetsEverythingOnceItIsBack() async throws {
        try await WebhookReceiver.with(secret: F.secret) { receiver in
            try await F.withClient { client in
                let store = InMemoryStore()
                let logger = Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() })
                // The sink gives up quickly; the relay keeps the batch and tries again.
                let sink = try F.sink(
                    url: receiver.url, client: client, clock: ContinuousClock(),
                    retry: RetryPolicy(maxAttempts: 2, initialBackoff: .milliseconds(20), jitter: 0))
                let metrics = BrokerMetrics()
                let relay = DeliveryRelay(
                    store: store, dispatcher: DeliveryDispatcher(sinks: [sink], metrics: metrics, logger: logger),
                    mode: .background, metrics: metrics,
                    backoff: RetryPolicy(initialBackoff: .milliseconds(50), maxBackoff: .milliseconds(200)), logger: logger)
                receiver.failAll(with: .unavailable)
                let running = Task { try await relay.run() }
                defer { running.cancel() }

                let first = F.deliveries(5, prefix: "a_")
                try await store.saveActivities([], enqueue: first)
                await relay.submit(first)
                let refusedBefore = try await eventually { receiver.requests >= 6 }
                #expect(refusedBefore, "the relay kept trying while the receiver was away")
                #expect(receiver.received.isEmpty)

                receiver.failAll(with: nil)
                let back = try await eventually { receiver.received.count >= 5 }
                #expect(back)
                #expect(receiver.received.map(\.id) == first.map(\.id))
                #expect(try await eventually { await store.queuedDeliveryCount() == 0 })
            }
        }
    }
}

/// `GET /v1/admin/dead-letters` as a client reads it.
private struct DeadLetterListing: Decodable {
    struct Letter: Decodable {
        var sink: String
        var status: Int
        var reason: String
        var delivery: DeliveryRecord
    }

    var deadLetters: [Letter]
}
