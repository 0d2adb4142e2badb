import Foundation
import MatchcastCore
import MatchcastService
import MatchcastStore
import MatchcastTesting
import Testing

private typealias F = ManagerFixtures

/// Follows that arrive while the lifecycle's gate is held queue up and run together: one store write for their
/// new activities, one save for their starts, each follow answered with its own activity.
@Suite("lifecycle manager: queued follows run together")
struct FollowQueueTests {
    /// Holds a first follow inside its store write, queues `devices` behind it, releases it, and returns each
    /// queued follow's outcome (in the order of `devices`).
    private static func queueBehindHeldFollow(
        _ h: ManagerHarness, _ store: ManagerScriptedStore, first: String, devices: [String]
    ) async throws -> (first: ActivityRecord, queued: [Result<ActivityRecord, any Error>]) {
        let gate = store.saveActivityGate
        gate.arm()
        let held = Task { try await h.lifecycle.follow(deviceId: first, matchId: "m", environment: .production) }
        await gate.waitUntilHit()
        var tasks: [Task<ActivityRecord, any Error>] = []
        for device in devices {
            tasks.append(Task { try await h.lifecycle.follow(deviceId: device, matchId: "m", environment: .production) })
        }
        let allQueued = try await eventually { await h.lifecycle.queuedFollowCount == devices.count }
        #expect(allQueued, "every follow queued behind the held one")
        gate.release()
        let firstRecord = try await held.value
        var outcomes: [Result<ActivityRecord, any Error>] = []
        for task in tasks { outcomes.append(await task.result) }
        return (firstRecord, outcomes)
    }

    @Test("queued follows of a live match: one write for their activities, one start each, a repeat gets the same one",
          .timeLimit(.minutes(1)))
    func queuedFollowsShareOneWrite() async throws {
        let store = ManagerScriptedStore()
        let h = ManagerHarness(store: store)
        try await h.ingest(F.football("m"))
        var devices: [String] = []
        for n in 0..<9 { devices.append(try await h.device(pushToStart: F.pushToStart(n))) }

        // devices[3] follows twice: a client retry inside the same batch.
        let queued = Array(devices.dropFirst()) + [devices[3]]
        let (first, outcomes) = try await Self.queueBehindHeldFollow(h, store, first: devices[0], devices: queued)

        let records = try outcomes.map { try $0.get() }
        #expect(first.deviceId == devices[0])
        #expect(records.map(\.deviceId) == queued)
        #expect(records.allSatisfy { $0.phase == .starting }, "the match is live and every device has a token")
        #expect(records[2].activityId == records[records.count - 1].activityId, "the repeat answers with the same activity")
        #expect(Set(records.map(\.activityId)).count == devices.count - 1)
        #expect(store.savedBatches.withLock { $0 } == [devices.count - 1],
                "the queued follows' new activities went to the store in one call")
        let starts = h.deliveries(.start)
        #expect(starts.count == devices.count, "one start per device, none twice")
        #expect(Set(starts.map(\.activityId)) == Set([first.activityId] + records.map(\.activityId)))
        for device in devices {
            let open = try await store.activities(deviceId: device).filter(\.isOpen)
            #expect(open.count == 1, "device \(device): one open activity")
        }
    }

    @Test("a queued follow the store refuses fails alone; the others are saved and start", .timeLimit(.minutes(1)))
    func aRefusedFollowFailsAlone() async throws {
        let store = ManagerScriptedStore()
        let h = ManagerHarness(store: store)
        try await h.ingest(F.football("m"))
        var devices: [String] = []
        for n in 0..<4 { devices.append(try await h.device(pushToStart: F.pushToStart(n))) }

        // No such device: the store refuses its activity, and with it the batch; each is then saved alone.
        let queued = [devices[1], "ghost-device", devices[2], devices[3]]
        let (_, outcomes) = try await Self.queueBehindHeldFollow(h, store, first: devices[0], devices: queued)

        #expect(throws: ServiceError.self) { try outcomes[1].get() }
        if case .failure(let error as ServiceError) = outcomes[1] { #expect(error.code == .notFound) }
        let others = try [outcomes[0], outcomes[2], outcomes[3]].map { try $0.get() }
        #expect(others.map(\.deviceId) == [devices[1], devices[2], devices[3]])
        #expect(others.allSatisfy { $0.phase == .starting })
        #expect(store.savedBatches.withLock { $0 } == [4], "the batch was tried once, then each alone")
        #expect(try await store.activities(deviceId: "ghost-device").isEmpty)
        #expect(h.deliveries(.start).count == devices.count, "every real device started once")
    }

    @Test("follows from many clients at once on a SQLite file: one activity and one start per device",
          .timeLimit(.minutes(2)))
    func concurrentFollowsOnSQLite() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("follow-queue-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        let store = try SQLiteStore(path: folder.appendingPathComponent("store.sqlite").path)
        let h = ManagerHarness(store: store)
        try await h.ingest(F.football("m"))
        var devices: [String] = []
        for n in 0..<200 { devices.append(try await h.device(pushToStart: F.pushToStart(n))) }

        // Every device follows twice, all at once, through the facade (follow row, activity, start).
        let views = try await withThrowingTaskGroup(of: FollowView.self) { group in
            for device in devices + devices {
                group.addTask { try await h.service.follow(deviceId: device, matchId: "m") }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }

        #expect(views.count == 2 * devices.count)
        #expect(Set(views.compactMap(\.activityId)).count == devices.count, "one activity per device")
        #expect(h.deliveries(.start).count == devices.count, "one start per device")
        let open = try await store.openActivities()
        #expect(open.count == devices.count)
        #expect(Set(open.map(\.deviceId)) == Set(devices))
    }
}
