import Foundation
import MatchcastCore
@testable import MatchcastStore
import Testing

private typealias F = StoreFixture

/// Small writes of many matches sent to PostgreSQL as one statement (`PostgresWriteGroup`): what lands, and that each
/// caller still gets its own outcome. The linger is long so that the writes started together surely meet on a
/// loaded machine; a first write makes the kind busy of late, so the others wait for one another.
@Suite("PostgreSQL grouped writes", .enabled(if: PostgresTestServer.isConfigured, PostgresTestServer.skipMessage))
struct PostgresGroupedWritesTests {
    static let linger: Duration = .seconds(2)

    /// One activity of `match` (on `dev-a`) with its update delivery, for a save of its own.
    static func update(_ match: String, _ index: Int) -> (ActivityRecord, Delivery) {
        var delivery = Outbox.delivery("dlv-\(match)", activity: "act-\(match)", .update, timestamp: 1_776_784_329 + index)
        delivery.matchId = match
        return (F.activity("act-\(match)", match: match, token: "tok-\(match)"), delivery)
    }

    /// Runs `body` for each of `items` at once and gives each outcome: "ok" or the error's reason.
    static func concurrently<Item: Sendable>(
        _ items: [Item], _ body: @escaping @Sendable (Item) async throws -> Void
    ) async -> [String] {
        await withTaskGroup(of: (Int, String).self) { tasks in
            for (position, item) in items.enumerated() {
                tasks.addTask {
                    do {
                        try await body(item)
                        return (position, "ok")
                    } catch let error as StoreError {
                        return (position, error.reason)
                    } catch {
                        return (position, "\(error)")
                    }
                }
            }
            var outcomes = [String](repeating: "", count: items.count)
            for await (position, outcome) in tasks { outcomes[position] = outcome }
            return outcomes
        }
    }

    @Test("fenced saves of several matches go in one statement; a save whose lease is lost fails alone")
    func fencedSavesGoTogether() async throws {
        try await PostgresTestServer.withFreshStore(writeLinger: Self.linger) { store in
            try await store.createDevice(F.device("dev-a"))
            let matches = (0..<6).map { "m-\($0)" }
            var generations: [String: Int] = [:]
            for match in matches {
                generations[match] = try #require(try await store.claim(matchId: match, owner: "a", ttl: .seconds(60))).lease.generation
            }
            // The last match's fence names a generation the lease no longer has.
            generations["m-5"]! += 1
            let (first, firstDelivery) = Self.update("m-0", 0)
            try await store.saveActivities([first], enqueue: [firstDelivery], fence: LeaseFence(owner: "a", generations: ["m-0": generations["m-0"]!]))
            #expect(store.saves.groupedCalls == 0, "the first save found no other of late: it went alone")

            let fences = generations
            let outcomes = await Self.concurrently(Array(matches.enumerated())) { index, match in
                let (record, delivery) = Self.update(match, index + 10)
                try await store.saveActivities(
                    [record], enqueue: [delivery], fence: LeaseFence(owner: "a", generations: [match: fences[match]!]))
            }
            #expect(outcomes == ["ok", "ok", "ok", "ok", "ok", "leaseLost"])
            #expect(store.saves.groupedCalls >= 1)
            #expect(store.saves.itemsSentGrouped >= 2)
            for (index, match) in matches.enumerated() {
                let queued = try await store.queuedDeliveries(matchId: match)
                if match == "m-5" {
                    #expect(queued.isEmpty, "nothing written under a lost lease")
                    #expect(try await store.activity(id: "act-m-5") == nil)
                } else {
                    // The later update replaced the first one of m-0: one delivery per match, the latest.
                    #expect(queued.map(\.id) == ["dlv-\(match)"])
                    #expect(queued.first?.payload.aps.timestamp == 1_776_784_329 + index + 10)
                    #expect(try await store.activity(id: "act-\(match)")?.updateToken == "tok-\(match)")
                }
            }
        }
    }

    @Test("saves that carry their match's row go in one statement with the rows; a refused one saves neither")
    func savesWithTheirMatchesGoTogether() async throws {
        try await PostgresTestServer.withFreshStore(writeLinger: Self.linger) { store in
            try await store.createDevice(F.device("dev-a"))
            let matches = ["m-0", "m-1", "m-ghost", "m-2"]
            var generations: [String: Int] = [:]
            for match in matches {
                generations[match] = try #require(try await store.claim(matchId: match, owner: "a", ttl: .seconds(60))).lease.generation
            }
            @Sendable func row(_ match: String, goals: Int) -> MatchRecord {
                MatchRecord(snapshot: F.football(.live, goals, 0, clock: "\(goals)'", seq: goals, id: match), updatedAt: F.at(goals))
            }
            let (first, firstDelivery) = Self.update("m-first", 0)
            try await store.saveActivities([first], enqueue: [firstDelivery])
            let fences = generations
            let grouped = store.saves.groupedCalls
            let outcomes = await Self.concurrently(matches) { match in
                var (record, delivery) = Self.update(match, 1)
                if match == "m-ghost" { record.deviceId = "dev-unknown" }
                try await store.saveActivities(
                    [record], enqueue: [delivery], fence: LeaseFence(owner: "a", generations: [match: fences[match]!]),
                    share: nil, match: row(match, goals: 2))
            }
            #expect(outcomes == ["ok", "ok", "notFound", "ok"])
            #expect(store.saves.groupedCalls > grouped, "sent together")
            for match in ["m-0", "m-1", "m-2"] {
                #expect(try await store.match(id: match) == row(match, goals: 2))
                #expect(try await store.queuedDeliveries(matchId: match).map(\.id) == ["dlv-\(match)"])
            }
            // Refused as a group, then each alone: the refused one left nothing, its match's row neither.
            #expect(try await store.match(id: "m-ghost") == nil)
            #expect(try await store.queuedDeliveries(matchId: "m-ghost").isEmpty)

            // Accepted as a group: every row lands with its save.
            let groupedBefore = store.saves.groupedCalls
            let later = await Self.concurrently(["m-0", "m-1", "m-2"]) { match in
                let (record, delivery) = Self.update(match, 3)
                try await store.saveActivities(
                    [record], enqueue: [delivery], fence: LeaseFence(owner: "a", generations: [match: fences[match]!]),
                    share: nil, match: row(match, goals: 3))
            }
            #expect(later == ["ok", "ok", "ok"])
            #expect(store.saves.groupedCalls > groupedBefore, "sent together")
            for match in ["m-0", "m-1", "m-2"] { #expect(try await store.match(id: match) == row(match, goals: 3)) }
        }
    }

    @Test("a save the database refuses, sent with others, fails alone with its reason; the others land")
    func aRefusedSaveFailsAlone() async throws {
        try await PostgresTestServer.withFreshStore(writeLinger: Self.linger) { store in
            try await store.createDevice(F.device("dev-a"))
            let (first, firstDelivery) = Self.update("m-first", 0)
            try await store.saveActivities([first], enqueue: [firstDelivery])
            let outcomes = await Self.concurrently(["m-0", "m-1", "m-ghost", "m-2"]) { match in
                var (record, delivery) = Self.update(match, 1)
                if match == "m-ghost" { record.deviceId = "dev-unknown" }
                try await store.saveActivities([record], enqueue: [delivery])
            }
            #expect(outcomes == ["ok", "ok", "notFound", "ok"])
            for match in ["m-0", "m-1", "m-2"] {
                #expect(try await store.queuedDeliveries(matchId: match).map(\.id) == ["dlv-\(match)"])
            }
            #expect(try await store.queuedDeliveries(matchId: "m-ghost").isEmpty)
        }
    }

    @Test("saves of several matches' states go in one statement, each read back as saved")
    func matchSavesGoTogether() async throws {
        try await PostgresTestServer.withFreshStore(writeLinger: Self.linger) { store in
            try await store.saveMatch(MatchRecord(snapshot: F.football(.live, 0, 0, clock: "1'", id: "m-first"), updatedAt: F.at(1)))
            let records = (0..<8).map { index in
                MatchRecord(
                    snapshot: F.football(.live, index, 1, clock: "\(10 + index)'", id: "m-\(index)"), updatedAt: F.at(10 + index),
                    highPrioritySends: index.isMultiple(of: 2) ? [] : [Int(F.at(5).timeIntervalSince1970), Int(F.at(6).timeIntervalSince1970)])
            }
            let outcomes = await Self.concurrently(records) { try await store.saveMatch($0) }
            #expect(outcomes == Array(repeating: "ok", count: 8))
            #expect(store.matchSaves.groupedCalls >= 1)
            #expect(store.matchSaves.itemsSentGrouped >= 2)
            for record in records {
                #expect(try await store.match(id: record.matchId) == record)
            }
        }
    }

    @Test("removals of a few sent deliveries each go in one statement, and every one is gone")
    func removalsGoTogether() async throws {
        try await PostgresTestServer.withFreshStore(writeLinger: Self.linger) { store in
            try await store.createDevice(F.device("dev-a"))
            let matches = (0..<6).map { "m-\($0)" }
            // One call (several matches' deliveries never wait for others), not six in a row that would each wait.
            let updates = matches.enumerated().map { Self.update($0.element, $0.offset) }
            try await store.saveActivities(updates.map(\.0), enqueue: updates.map(\.1))
            #expect(try await store.queuedDeliveryCount() == 6)
            try await store.removeQueuedDeliveries(ids: ["dlv-m-0"])
            let outcomes = await Self.concurrently(Array(matches.dropFirst())) { match in
                // The same id twice among the removals of one statement is removed once.
                try await store.removeQueuedDeliveries(ids: match == "m-3" ? ["dlv-m-3", "dlv-m-4"] : ["dlv-\(match)"])
            }
            #expect(outcomes == Array(repeating: "ok", count: 5))
            #expect(store.removals.groupedCalls >= 1)
            #expect(try await store.queuedDeliveryCount() == 0)
        }
    }
}
