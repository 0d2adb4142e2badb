import Foundation
import MatchcastCore
import MatchcastStore
import Testing

private typealias F = StoreFixture

/// Deliveries for the outbox tests: real payloads, with a content-state string that needs escaping, so a store that
/// re-encodes or trims the bytes is caught.
enum Outbox {
    static func delivery(_ id: String, activity: String, _ event: ActivityEvent, timestamp: Int = 1_776_784_329) -> Delivery {
        let state = ContentState(
            status: "live", statusText: "Live \"1H\"", home: .init(name: "Müller", score: "2"),
            away: .init(name: "LIV", score: "1"), summary: "MUN 2–1 LIV · 67'")
        var aps = APS(timestamp: timestamp, event: event, contentState: state, staleDate: timestamp + 300)
        if event == .end { aps = APS(timestamp: timestamp, event: .end, contentState: state, dismissalDate: timestamp + 900) }
        return Delivery(
            id: id, matchId: "epl-mun-liv", activityId: activity,
            target: PushTarget(kind: .updateToken, value: "ab12" + String(repeating: "cd", count: 30)),
            apns: APNsHeaders(topic: "com.example.app.push-type.liveactivity", priority: 10, expiration: timestamp + 3600),
            payload: try! PushPayload(aps))
    }
}

@Suite("Store contract: outbox and dead letters")
struct OutboxContractTests {
    @Test(arguments: StoreKind.allCases)
    func queuedDeliveriesComeBackInOrderWithTheirBytes(_ kind: StoreKind) async throws {
        try await kind.withStore { store in
            try await store.createDevice(F.device("dev-a"))
            let record = F.activity("act-1")
            let sent = [
                Outbox.delivery("dlv_1", activity: "act-1", .start),
                Outbox.delivery("dlv_2", activity: "act-2", .update),
                Outbox.delivery("dlv_3", activity: "act-1", .end),
            ]
            try await store.saveActivities([record], enqueue: sent)

            #expect(try await store.activity(id: "act-1") == record)
            let queued = try await store.queuedDeliveries(limit: 10)
            #expect(queued == sent)
            #expect(queued.map { $0.payload.bytes } == sent.map { $0.payload.bytes })
            #expect(try await store.queuedDeliveries(limit: 2).map(\.id) == ["dlv_1", "dlv_2"])
            #expect(try await store.queuedDeliveries(limit: 0).isEmpty)
            #expect(try await store.queuedDeliveryCount() == 3)
        }
    }

    @Test("an in-memory store without an outbox (replay's) saves the records and queues none of the deliveries")
    func inMemoryWithoutAnOutbox() async throws {
        let store = InMemoryStore(keepsOutbox: false)
        #expect(!store.keepsOutbox)
        #expect(InMemoryStore().keepsOutbox)
        try await store.createDevice(F.device("dev-a"))
        let record = F.activity("act-1")
        try await store.saveActivities([record], enqueue: [
            Outbox.delivery("dlv_1", activity: "act-1", .start), Outbox.delivery("dlv_2", activity: "act-1", .update),
        ])
        #expect(await store.activity(id: "act-1") == record)
        #expect(await store.queuedDeliveryCount() == 0)
        #expect(await store.queuedDeliveries(limit: 10).isEmpty)
    }

    @Test(arguments: StoreKind.allCases)
    func aNewerUpdateReplacesTheQueuedOneButStartsAndEndsStay(_ kind: StoreKind) async throws {
        try await kind.withStore { store in
            try await store.saveActivities([], enqueue: [
                Outbox.delivery("dlv_s", activity: "act-1", .start),
                Outbox.delivery("dlv_u1", activity: "act-1", .update),
                Outbox.delivery("dlv_o", activity: "act-2", .update),
            ])
            try await store.saveActivities([], enqueue: [Outbox.delivery("dlv_u2", activity: "act-1", .update, timestamp: 1_776_784_400)])
            try await store.saveActivities([], enqueue: [Outbox.delivery("dlv_e", activity: "act-1", .end)])

            // The replaced update is gone; its replacement counts as queued when it was.
            #expect(try await store.queuedDeliveries(limit: 10).map(\.id) == ["dlv_s", "dlv_o", "dlv_u2", "dlv_e"])
            #expect(try await store.queuedDeliveries(limit: 10)[2].payload.aps.timestamp == 1_776_784_400)
        }
    }

    @Test(arguments: StoreKind.allCases)
    func removingForgetsOnlyThoseIds(_ kind: StoreKind) async throws {
        try await kind.withStore { store in
            try await store.saveActivities([], enqueue: [
                Outbox.delivery("dlv_1", activity: "act-1", .update),
                Outbox.delivery("dlv_2", activity: "act-2", .update),
                Outbox.delivery("dlv_3", activity: "act-3", .end),
            ])
            try await store.removeQueuedDeliveries(ids: ["dlv_2", "dlv_unknown"])
            try await store.removeQueuedDeliveries(ids: [])
            #expect(try await store.queuedDeliveries(limit: 10).map(\.id) == ["dlv_1", "dlv_3"])
            #expect(try await store.queuedDeliveryCount() == 2)

            // A replaced update's old id no longer names anything: removing it leaves the new one.
            try await store.saveActivities([], enqueue: [Outbox.delivery("dlv_4", activity: "act-1", .update)])
            try await store.removeQueuedDeliveries(ids: ["dlv_1"])
            #expect(try await store.queuedDeliveries(limit: 10).map(\.id) == ["dlv_3", "dlv_4"])
        }
    }

    @Test(arguments: StoreKind.allCases)
    func aRefusedSaveQueuesNothing(_ kind: StoreKind) async throws {
        try await kind.withStore { store in
            // No such device: the activity is refused, and the deliveries with it.
            await #expect(throws: StoreError.self) {
                try await store.saveActivities(
                    [F.activity("act-1", device: "dev-missing")],
                    enqueue: [Outbox.delivery("dlv_1", activity: "act-1", .update)])
            }
            let queued = try await store.queuedDeliveryCount()
            let saved = try await store.activity(id: "act-1")
            #expect(queued == 0)
            #expect(saved == nil)
        }
    }

    @Test(arguments: StoreKind.allCases)
    func deadLettersNewestFirstOnePerDeliveryAndSink(_ kind: StoreKind) async throws {
        try await kind.withStore { store in
            let first = Outbox.delivery("dlv_1", activity: "act-1", .update)
            let second = Outbox.delivery("dlv_2", activity: "act-2", .end)
            try await store.recordDeadLetters([
                DeadLetter(delivery: first, sink: "webhook", status: 400, reason: "bad request", recordedAt: F.at(10)),
                DeadLetter(delivery: second, sink: "webhook", status: 410, reason: "gone", recordedAt: F.at(20)),
            ])
            try await store.recordDeadLetters([
                DeadLetter(delivery: first, sink: "webhook", status: 422, reason: "again", recordedAt: F.at(30)),
                DeadLetter(delivery: first, sink: "apns", status: 400, reason: String(repeating: "x", count: 2000),
                           recordedAt: F.at(5)),
            ])
            let letters = try await store.deadLetters(limit: 10)
            #expect(letters.map { "\($0.delivery.id)/\($0.sink)/\($0.status)" } == [
                "dlv_1/webhook/422", "dlv_2/webhook/410", "dlv_1/apns/400",
            ])
            #expect(letters[0].delivery == first)
            #expect(letters[0].delivery.payload.bytes == first.payload.bytes)
            #expect(letters[0].recordedAt == F.at(30))
            #expect(letters[2].reason.count == DeadLetter.maxReasonLength)
            #expect(try await store.deadLetters(limit: 1).map(\.delivery.id) == ["dlv_1"])
        }
    }
}
