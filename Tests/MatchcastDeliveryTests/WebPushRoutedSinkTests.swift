import Crypto
import Foundation
import MatchcastCore
import MatchcastDelivery
import MatchcastTesting
import Synchronization
import Testing

private typealias Fixture = WebPushSinkFixture

/// The Web Push sink as `serve` runs it (`Recipient.deliveryTargets`, `waitsForSends`): each delivery to the
/// subscription its target carries, other targets left alone, one gone subscription reported and the others
/// carrying on, and `deliver` returning only once everything it was handed is settled.
@Suite("Web Push sink routed by target: many browsers, one gone")
struct WebPushRoutedSinkTests {
    /// The match's steps, each aimed at `browser` (as the broker makes them) or at an APNs token.
    static func steps(_ matchId: String, to browser: FakePushService.Subscriber?) throws -> [Delivery] {
        try Fixture.match(matchId, updates: 2).map { step in
            var delivery = step.delivery
            if let browser {
                let value = try WebPushMessage.Subscription(json: browser.json, now: Fixture.now).canonicalJSON
                delivery.target = PushTarget(kind: .webPushSubscription, value: value)
            }
            return delivery
        }
    }

    @Test("three browsers and an iPhone: the live browsers get the match, the gone one is reported once, the iPhone's pushes are not this sink's")
    func routed() async throws {
        try await Fixture.withService { service, first, key, client in
            let second = service.subscribe(applicationServerKey: Base64URL.encode(key.publicKey.x963Representation))
            let gone = service.subscribe(applicationServerKey: Base64URL.encode(key.publicKey.x963Representation))
            service.unsubscribe(gone)
            let reported = Mutex<[(String, String)]>([])
            let deadLetters = InMemoryDeadLetters()
            let sink = try WebPushSink(
                configuration: WebPushSinkConfiguration(
                    recipient: .deliveryTargets, vapid: VAPIDCredentials(privateKey: key, subject: Fixture.subject),
                    waitsForSends: true, requestTimeout: .seconds(60), maxConcurrentRequests: 8),
                client: client, deadLetters: deadLetters, clock: InstantClock(), now: { Fixture.now },
                onGone: { subscription, reason in reported.withLock { $0.append((subscription, reason)) } },
                logger: Fixture.quiet)
            defer { sink.shutdown() }
            let batch = try Self.steps("m1", to: first) + Self.steps("m1", to: second) + Self.steps("m1", to: gone)
                + Self.steps("m1", to: nil)
            try await sink.deliver(batch)
            // Returned: everything of this sink's is settled (4 steps each for three browsers), nothing else counted.
            let settled = sink.settled
            #expect(settled.total == 12, "\(settled)")
            for browser in [first, second] {
                let events = service.delivered.filter { $0.subscriberId == browser.id }
                    .compactMap { ($0.json?["data"] as? [String: Any])?["event"] as? String }
                #expect(events.first == "start" && events.last == "end", "\(events)")
            }
            #expect(service.log.filter { $0.subscriberId == gone.id }.map(\.status) == [410], "one push, then nothing")
            let goneValue = try WebPushMessage.Subscription(json: gone.json, now: Fixture.now).canonicalJSON
            let reports = reported.withLock { $0 }
            #expect(reports.count == 1 && reports.first?.0 == goneValue && reports.first?.1 == "webpush:HTTP 410", "\(reports)")
            // The gone browser's pushes not replaced by a newer one while waiting (latest wins), and nothing of the iPhone's.
            let letters = await deadLetters.entries.flatMap(\.deliveries)
            #expect(!letters.isEmpty && letters.allSatisfy { $0.target.value == goneValue }, "\(letters.map(\.target))")
            #expect(letters.count + settled.superseded == 4 + 8 - settled.delivered, "every push settled once: \(settled)")
            #expect(sink.subscriptionGone == nil, "one gone browser does not stop the sink")

            // Later pushes to the gone subscription are dead-lettered unsent; the live ones still go.
            let toFirst = service.delivered.filter { $0.subscriberId == first.id }.count
            try await sink.deliver(try Self.steps("m2", to: gone) + Self.steps("m2", to: first))
            #expect(service.log.filter { $0.subscriberId == gone.id }.count == 1)
            #expect(service.delivered.filter { $0.subscriberId == first.id }.count >= toFirst + 2, "m2's start and end at least")
            #expect(reported.withLock { $0.count } == 1, "reported once")
        }
    }

    @Test("a target that is not a readable subscription is dead-lettered, naming what is wrong")
    func unreadableTarget() async throws {
        try await Fixture.withService { _, _, key, client in
            let deadLetters = InMemoryDeadLetters()
            let sink = try WebPushSink(
                configuration: WebPushSinkConfiguration(
                    recipient: .deliveryTargets, vapid: VAPIDCredentials(privateKey: key, subject: Fixture.subject),
                    waitsForSends: true),
                client: client, deadLetters: deadLetters, clock: InstantClock(), now: { Fixture.now }, logger: Fixture.quiet)
            defer { sink.shutdown() }
            var delivery = try Self.steps("m", to: nil)[0]
            delivery.target = PushTarget(kind: .webPushSubscription, value: #"{"endpoint": "ftp://nowhere"}"#)
            try await sink.deliver([delivery])
            let letters = await deadLetters.entries
            #expect(letters.count == 1 && letters.first?.body.contains("endpoint") == true, "\(letters.map(\.body))")
        }
    }
}
