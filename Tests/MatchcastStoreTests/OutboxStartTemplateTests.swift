import Foundation
import MatchcastCore
@testable import MatchcastStore
import Testing

/// A kick-off's starts differ only in their activity ids (`StartPayloadTemplate`): SQLite (v8) queues a chunk of them
/// as one payload and one batch, and cuts each start's payload again on reading. Every store must give back exactly
/// the deliveries it was given.
@Suite("Store contract: a kick-off's starts in the outbox")
struct OutboxStartTemplateTests {
    static let snapshot = MatchSnapshot(
        id: "epl-mun-liv", sport: .football, status: .live, competition: "Premier League",
        home: Team(id: "h", name: "Manchester United", short: "MUN"), away: Team(id: "a", name: "Liverpool", short: "LIV"),
        score: .teamTotals(TeamScore(home: 0, away: 0, period: "1H", clock: "1'")))

    /// Starts for `activities`, built as a kick-off builds them (one builder: all but the first cut from a template,
    /// ids that cannot be put in as they are encoded whole).
    static func starts(_ activities: [String], builder: inout DeliveryBuilder, timestamp: Int = 1_776_784_329) throws -> [Delivery] {
        let content = try MatchRenderer.render(snapshot).contentState
        return try activities.map { activityId in
            let aps = APS(timestamp: timestamp, event: .start, contentState: content, staleDate: timestamp + 300,
                          alert: .init(title: content.summary, body: "Kick-off"),
                          attributes: ActivityAttributes(activityId: activityId, snapshot: snapshot))
            let intent = PushIntent(recipient: .pushToStart, aps: aps, priority: 10, expiration: timestamp + 3600)
            return try #require(try builder.build(
                intent, matchId: snapshot.id, activityId: activityId, pushToStartToken: "ptst-" + activityId,
                now: Date(timeIntervalSince1970: TimeInterval(timestamp))))
        }
    }

    static func activities(_ prefix: String, _ count: Int) -> [String] {
        (0..<count).map { prefix + String(format: "-%03d", $0) }
    }

    @Test(arguments: StoreKind.allCases)
    func startsComeBackAsTheyWereQueuedThroughRemovalsAndReplacements(_ kind: StoreKind) async throws {
        try await kind.withStore { store in
            var builder = DeliveryBuilder(bundleId: "com.example.app", seed: 7)
            // An id that needs escaping in JSON is encoded whole, between templated ones.
            let first = try Self.starts(Self.activities("a", 20) + [#"act "quoted""#] + Self.activities("b", 20), builder: &builder)
            #expect(first.filter { $0.payload.startTemplate != nil }.count >= 39, "the kick-off is cut from a template")
            try await store.saveActivities([], enqueue: first)
            #expect(try await store.queuedDeliveries(limit: 1000) == first)
            #expect(try await store.queuedDeliveries(limit: 1000).map(\.payload.aps) == first.map(\.payload.aps))

            // Some are sent; a later kick-off (another template) starts some activities again.
            let sent = Set(first.enumerated().filter { $0.offset % 4 == 1 }.map(\.element.id))
            try await store.removeQueuedDeliveries(ids: Array(sent).sorted())
            let again = try Self.starts(Self.activities("a", 10), builder: &builder, timestamp: 1_776_784_900)
            try await store.saveActivities([], enqueue: again)
            let restarted = Set(again.map(\.activityId))
            let expected = first.filter { !sent.contains($0.id) && !restarted.contains($0.activityId) } + again
            let queued = try await store.queuedDeliveries(limit: 1000)
            #expect(queued == expected)
            #expect(queued.map(\.payload.aps) == expected.map(\.payload.aps))
            #expect(queued.map(\.payload.bytes) == expected.map { try! PushPayload($0.payload.aps).bytes },
                    "each start reads back as the bytes a full encode gives")
            #expect(try await store.queuedDeliveryCount() == expected.count)
        }
    }

    @Test func sqliteKeepsAChunkOfStartsAsOnePayload() async throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let store = try SQLiteStore(path: directory.path("store.sqlite"))
        defer { try? store.close() }
        var builder = DeliveryBuilder(bundleId: "com.example.app", seed: 7)
        _ = try Self.starts(["warm-up"], builder: &builder)  // the builder's first start makes the template
        let starts = try Self.starts(Self.activities("a", 300), builder: &builder)
        try await store.saveActivities([], enqueue: starts)
        let rows = try await store.read("test") { db in
            (try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM outboxPayload"),
             try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM outboxBatch"),
             try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM outboxPayload WHERE activityIdAt IS NOT NULL"))
        }
        #expect(rows.0 == 1 && rows.1 == 1 && rows.2 == 1)
        #expect(try await store.queuedDeliveries(limit: 1000) == starts)
    }

    @Test func aDamagedStartTemplateIsCorruptNotACrash() async throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let store = try SQLiteStore(path: directory.path("store.sqlite"))
        defer { try? store.close() }
        var builder = DeliveryBuilder(bundleId: "com.example.app", seed: 7)
        let starts = try Self.starts(Self.activities("a", 3), builder: &builder)
        try await store.saveActivities([], enqueue: starts)
        try await store.write("test") { db in try db.execute(sql: "UPDATE outboxPayload SET activityIdAt = activityIdAt + 1") }
        await #expect(throws: StoreError.self) { try await store.queuedDeliveries(limit: 10) }
        do {
            _ = try await store.queuedDeliveries(limit: 10)
        } catch {
            #expect("\(error)".contains("stand-in"), "names what is wrong: \(error)")
        }
    }
}
