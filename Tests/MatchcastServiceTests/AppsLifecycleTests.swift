import Foundation
import MatchcastCore
import MatchcastService
import MatchcastStore
import MatchcastTesting
import Testing

private typealias F = ManagerFixtures

/// Several apps per deployment (docs/apps.md) in the lifecycle: one match's pushes to devices of two apps each carry
/// their own app's topic, on every store; a device of an app taken out of the configuration gets nothing made for it.
@Suite("Lifecycle: the devices of several apps on one match")
struct AppsLifecycleTests {
    static let fantasy = AppCatalog.App(id: "fantasy", bundleId: "com.example.fantasy")
    static let defaultTopic = BrokerSettings().apps.defaultApp.topic

    @Test("a start, an update and the end to a device of each app: each push carries its device's app's topic",
          arguments: DirectDeviceTests.Store.available)
    func twoApps(store kind: DirectDeviceTests.Store) async throws {
        try await kind.with { store in
            let h = ManagerHarness(store: store, otherApps: [Self.fantasy])
            try await h.ingest(F.football("m", .scheduled, period: nil, clock: nil))
            let scores = try await h.device(pushToStart: F.pushToStart(1))
            let fantasy = try await h.service.registerDevice(app: "fantasy").deviceId
            #expect(fantasy.hasPrefix("fantasy:dev_"))
            try await h.service.setPushToStartToken(deviceId: fantasy, token: F.pushToStart(2), environment: .production)
            var activity: [String: String] = [:]
            for device in [scores, fantasy] {
                let id: String = try #require(try await h.service.follow(deviceId: device, matchId: "m").activityId)
                activity[device] = id
            }
            try await h.ingest(F.football("m"))
            for (device, n) in [(scores, 1), (fantasy, 2)] {
                _ = try await h.service.putActivity(
                    activityId: activity[device]!, deviceId: device, matchId: "m", updateToken: F.update(n), environment: nil)
            }
            try await h.ingest(F.football("m", home: 1, clock: "12'", events: [MatchEvent(id: "g1", type: "goal", text: "GOAL!")]))
            try await h.ingest(F.football("m", .completed, home: 1, period: "FT", clock: nil))

            let topics = [activity[scores]!: Self.defaultTopic, activity[fantasy]!: Self.fantasy.topic]
            for event in [ActivityEvent.start, .update, .end] {
                let pushes = h.deliveries(event)
                #expect(Set(pushes.map(\.activityId)) == Set(topics.keys), "\(event): \(pushes.map(\.activityId))")
                for push in pushes {
                    #expect(push.apns.topic == topics[push.activityId], "\(event) to \(push.activityId): \(push.apns.topic)")
                }
            }
            // One update's deliveries share one payload, whatever the app.
            let updates = h.deliveries(.update)
            #expect(Set(updates.map(\.payload.bytes)).count == 1)
        }
    }

    @Test("a device of an app no longer configured gets no push made for it; the default app's devices carry on, and it is counted")
    func appTakenOut() async throws {
        let store = InMemoryStore()
        let recording = RecordingMetrics()
        // Registered while the app was served; the broker now runs without it.
        let removed = "fantasy:dev_01JDEVICEOFAREMOVEDAPP00"
        try await store.createDevice(DeviceRecord(id: removed, secretHash: "", createdAt: Date(timeIntervalSince1970: 0)))
        try await store.setPushToStartToken(PushToStartTokenRecord(
            deviceId: removed, token: F.pushToStart(9), environment: .production, updatedAt: Date(timeIntervalSince1970: 0)))
        let h = ManagerHarness(store: store, metrics: BrokerMetrics(factory: recording))
        try await h.ingest(F.football("m", .scheduled, period: nil, clock: nil))
        let scores = try await h.device(pushToStart: F.pushToStart(1))
        _ = try await h.service.follow(deviceId: scores, matchId: "m")
        _ = try await h.service.follow(deviceId: removed, matchId: "m")
        try await h.ingest(F.football("m"))

        let starts = h.deliveries(.start)
        #expect(starts.map(\.target.value) == [F.pushToStart(1)], "\(starts.map(\.target.value))")
        #expect(h.deliveries.allSatisfy { $0.apns.topic == Self.defaultTopic })
        #expect(recording.counter("matchcast_deliveries_total", [("sink", "builder"), ("outcome", "no_app")]) == 1)
    }
}
