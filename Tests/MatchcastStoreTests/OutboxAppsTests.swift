import Foundation
import MatchcastCore
@testable import MatchcastStore
import Testing

/// One update's deliveries to the devices of two apps (docs/apps.md): one payload per app, since the topic differs,
/// interleaved in activity order. Every store gives back exactly what it was given, in order, each delivery with its own
/// app's topic.
@Suite("Store contract: an update to the devices of two apps in the outbox")
struct OutboxAppsTests {
    static let catalog = AppCatalog(defaultBundleId: "com.example.scores", others: [.init(id: "fantasy", bundleId: "com.example.fantasy")])

    /// One goal's update to `count` activities whose devices alternate between the two apps (every third the default
    /// app's, the others fantasy's, so the runs have uneven lengths).
    static func update(_ count: Int) throws -> [Delivery] {
        var builder = DeliveryBuilder(bundleId: "com.example.scores", seed: 3)
        let snapshot = OutboxStartTemplateTests.snapshot
        let content = try MatchRenderer.render(snapshot).contentState
        let aps = APS(timestamp: 1_776_784_400, event: .update, contentState: content, staleDate: 1_776_784_700)
        let intent = PushIntent(recipient: .updateToken(""), aps: aps, priority: 5, expiration: 1_776_788_000)
        var deliveries: [Delivery] = []
        for index in 0..<count {
            let activityId = String(format: "act-%04d", index)
            var push = intent
            push.recipient = .updateToken(CompactToken(String(format: "%064x", index)))
            let device = AppCatalog.deviceId(app: index % 3 == 0 ? AppCatalog.defaultId : "fantasy", base: "dev_\(index)")
            let topic: String = try #require(catalog.topic(ofDevice: device))
            deliveries.append(try #require(try builder.build(
                push, matchId: snapshot.id, activityId: activityId, pushToStartToken: nil, topic: topic,
                now: Date(timeIntervalSince1970: 1_776_784_400))))
        }
        return deliveries
    }

    @Test("each delivery comes back with its own app's topic", arguments: StoreKind.allCases)
    func comesBackAsQueued(_ kind: StoreKind) async throws {
        try await kind.withStore { store in
            let deliveries = try Self.update(300)
            #expect(Set(deliveries.map(\.apns.topic)).count == 2)
            try await store.saveActivities([], enqueue: deliveries)
            let queued = try await store.queuedDeliveries(limit: 1000)
            #expect(queued == deliveries)
            #expect(Dictionary(uniqueKeysWithValues: queued.map { ($0.id, $0.apns.topic) })
                == Dictionary(uniqueKeysWithValues: deliveries.map { ($0.id, $0.apns.topic) }))
            #expect(try await store.queuedDeliveryCount() == 300)
        }
    }
}
