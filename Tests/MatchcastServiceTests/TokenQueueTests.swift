import Foundation
import MatchcastCore
import MatchcastService
import MatchcastStore
import MatchcastTesting
import Testing

private typealias F = ManagerFixtures

/// Update tokens that arrive while their match's gate is held queue up and are registered together: one read of
/// their holders, one save of what they changed, each caller answered with its own activity or its own error, and
/// each one seeing what the earlier ones of its batch did.
@Suite("lifecycle manager: queued update tokens run together")
struct TokenQueueTests {
    /// One `registerUpdateToken` call.
    private struct Registration: Sendable {
        let activityId: String
        let deviceId: String
        let token: String
        var matchId = "m"
    }

    private static func register(_ h: ManagerHarness, _ r: Registration) async throws -> ActivityRecord {
        try await h.lifecycle.registerUpdateToken(
            activityId: r.activityId, deviceId: r.deviceId, matchId: r.matchId, token: r.token, environment: .production)
    }

    /// `count` devices with push-to-start tokens following the live match "m": for each, the registration of its
    /// started activity's update token (`F.update(n)` for the n-th).
    private static func startedDevices(_ h: ManagerHarness, _ count: Int) async throws -> [Registration] {
        try await h.ingest(F.football("m"))
        var started: [Registration] = []
        for n in 0..<count {
            let device = try await h.device(pushToStart: F.pushToStart(n))
            let view = try await h.service.follow(deviceId: device, matchId: "m")
            guard let activityId = view.activityId, view.activityState == "starting" else {
                throw ManagerHarnessFailure("the follow did not start: \(view)")
            }
            started.append(Registration(activityId: activityId, deviceId: device, token: F.update(n)))
        }
        return started
    }

    /// Holds `first` in its read of the token holders, queues `queued` behind it one after the other (so they run
    /// in that order), releases it, and returns each queued registration's outcome and the activities of each
    /// store save made from then on.
    private static func queueBehindHeldToken(
        _ h: ManagerHarness, _ store: ManagerScriptedStore, first: Registration, queued: [Registration]
    ) async throws -> (queued: [Result<ActivityRecord, any Error>], saves: [[String]]) {
        let mark = store.savedWithDeliveries.withLock { $0.count }
        store.openHoldersGate.arm()
        let held = Task { try await register(h, first) }
        await store.openHoldersGate.waitUntilHit()
        var tasks: [Task<ActivityRecord, any Error>] = []
        for (n, registration) in queued.enumerated() {
            tasks.append(Task { try await register(h, registration) })
            let inLine = try await eventually { await h.lifecycle.queuedTokenCount == n + 1 }
            #expect(inLine, "registration \(n) queued behind the held one")
        }
        store.openHoldersGate.release()
        _ = try await held.value
        var outcomes: [Result<ActivityRecord, any Error>] = []
        for task in tasks { outcomes.append(await task.result) }
        return (outcomes, Array(store.savedWithDeliveries.withLock { $0 }.dropFirst(mark)))
    }

    private static func code(_ outcome: Result<ActivityRecord, any Error>) -> ServiceError.Code? {
        guard case .failure(let error as ServiceError) = outcome else { return nil }
        return error.code
    }

    @Test("queued tokens: one read, one save for all of them, each activity active with its token; a repeat is no change",
          .timeLimit(.minutes(1)))
    func queuedTokensShareOneSave() async throws {
        let store = ManagerScriptedStore()
        let h = ManagerHarness(store: store)
        let registrations = try await Self.startedDevices(h, 8)
        // registrations[3] twice: a client retry inside the same batch.
        let queued = Array(registrations.dropFirst()) + [registrations[3]]

        let (outcomes, saves) = try await Self.queueBehindHeldToken(h, store, first: registrations[0], queued: queued)

        let records = try outcomes.map { try $0.get() }
        #expect(records.map(\.activityId) == queued.map(\.activityId))
        #expect(records.allSatisfy { $0.phase == .active })
        #expect(saves.count == 2, "the held registration's save, then one for all the queued ones: \(saves)")
        #expect(saves.last.map(Set.init) == Set(registrations.dropFirst().map(\.activityId)))
        #expect(saves.last?.count == registrations.count - 1, "each activity saved once, the repeat included")
        for registration in registrations {
            let holder = try await store.activity(updateToken: registration.token)
            #expect(holder?.activityId == registration.activityId)
            #expect(holder?.phase == .active)
        }
    }

    @Test("a token of another match does not wait behind a held match; each match's tokens are saved apart",
          .timeLimit(.minutes(1)))
    func otherMatchesDoNotWait() async throws {
        let store = ManagerScriptedStore()
        let h = ManagerHarness(store: store)
        let s = try await Self.startedDevices(h, 3)
        let mark = store.savedWithDeliveries.withLock { $0.count }
        store.openHoldersGate.arm()
        let held = Task { try await Self.register(h, s[0]) }
        await store.openHoldersGate.waitUntilHit()

        // Match m is held in its read of the token holders; m2's gate is free, so its token registers at once.
        let other = Registration(activityId: "app-act-m2", deviceId: s[1].deviceId, token: F.update(21), matchId: "m2")
        let adopted = try await Self.register(h, other)
        #expect(adopted.activityId == "app-act-m2")
        #expect(adopted.phase == .active)
        // m's own queue up behind the held one, and are saved together after it.
        let queued = [s[1], s[2]]
        var tasks: [Task<ActivityRecord, any Error>] = []
        for (n, registration) in queued.enumerated() {
            tasks.append(Task { try await Self.register(h, registration) })
            let inLine = try await eventually { await h.lifecycle.queuedTokenCount == n + 1 }
            #expect(inLine, "registration \(n) of m queued behind the held one")
        }
        store.openHoldersGate.release()
        _ = try await held.value
        var registered: [String] = []
        for task in tasks { registered.append(try await task.value.activityId) }

        #expect(registered == queued.map(\.activityId))
        let saves = Array(store.savedWithDeliveries.withLock { $0 }.dropFirst(mark))
        #expect(saves == [["app-act-m2"], [s[0].activityId], [s[1].activityId, s[2].activityId]])
    }

    @Test("refused tokens in a batch fail alone, each with its own error, seeing the earlier ones of the batch; one save",
          .timeLimit(.minutes(1)))
    func refusalsFailAlone() async throws {
        let store = ManagerScriptedStore()
        let h = ManagerHarness(store: store)
        let s = try await Self.startedDevices(h, 7)
        try await h.service.unfollow(deviceId: s[5].deviceId, matchId: "m")  // s[5]'s activity has ended
        let queued = [
            /* 0 */ s[1],
            /* 1 */ Registration(activityId: s[2].activityId, deviceId: s[2].deviceId, token: F.update(1)),  // taken by 0
            /* 2 */ Registration(activityId: s[3].activityId, deviceId: s[3].deviceId, token: F.update(0)),  // the held one's
            /* 3 */ Registration(activityId: s[4].activityId, deviceId: s[2].deviceId, token: F.update(4)),  // s[4]'s activity
            /* 4 */ Registration(activityId: s[5].activityId, deviceId: s[5].deviceId, token: F.update(5)),  // ended
            /* 5 */ s[6],
            /* 6 */ Registration(activityId: "app-act-6", deviceId: s[6].deviceId, token: F.update(66)),  // adopts, ends 5
            /* 7 */ s[6],  // ended by 6
            /* 8 */ Registration(activityId: "app-act-6b", deviceId: s[4].deviceId, token: F.update(6)),  // freed by 6
            /* 9 */ s[2],
        ]

        let (outcomes, saves) = try await Self.queueBehindHeldToken(h, store, first: s[0], queued: queued)

        #expect(outcomes.map(Self.code) == [nil, .conflict, .conflict, .forbidden, .conflict, nil, nil, .conflict, nil, nil])
        #expect(saves.count == 2, "the refusals were settled inside the batch, which was saved once: \(saves)")
        func holder(_ n: Int) async throws -> String? { try await store.activity(updateToken: F.update(n))?.activityId }
        #expect(try await holder(1) == s[1].activityId)
        #expect(try await holder(2) == s[2].activityId)
        #expect(try await holder(0) == s[0].activityId)
        #expect(try await holder(66) == "app-act-6")
        #expect(try await store.activity(id: s[6].activityId)?.phase == .ended, "replaced by the adopted one")
        #expect(try await store.activity(id: "app-act-6b")?.updateToken == F.update(6),
                "the token the replaced activity gave up was free for the next")
        // s[4]'s own activity was replaced by its adoption of app-act-6b; the forbidden attempt on it changed nothing.
        #expect(try await store.activity(id: s[4].activityId)?.phase == .ended)
        #expect(try await store.activity(id: s[4].activityId)?.updateToken == nil)
        #expect(try await store.activity(id: s[5].activityId)?.updateToken == nil)
    }

    @Test("a batch the store refuses is run again one by one: the bad token fails alone, the others are registered",
          .timeLimit(.minutes(1)))
    func refusedBatchFallsBackOneByOne() async throws {
        let store = ManagerScriptedStore()
        let h = ManagerHarness(store: store)
        let s = try await Self.startedDevices(h, 3)
        // No such device: the store refuses the adopted activity, and with it the batch.
        let queued = [s[1], Registration(activityId: "app-act-ghost", deviceId: "ghost-device", token: F.update(9)), s[2]]

        let (outcomes, saves) = try await Self.queueBehindHeldToken(h, store, first: s[0], queued: queued)

        #expect(outcomes.map(Self.code) == [nil, .notFound, nil])
        #expect(try outcomes[0].get().phase == .active)
        #expect(try outcomes[2].get().phase == .active)
        #expect(saves == [[s[0].activityId], queued.map(\.activityId)] + queued.map { [$0.activityId] },
                "the batch was tried once, then each alone")
        #expect(try await store.activity(id: "app-act-ghost") == nil)
        #expect(try await store.activity(updateToken: F.update(1))?.activityId == s[1].activityId)
        #expect(try await store.activity(updateToken: F.update(2))?.activityId == s[2].activityId)
        #expect(await h.lifecycle.census()[.active] == 3, "the dropped cache was read again from the store")
    }

    @Test("tokens from many clients at once on a SQLite file: each activity gets its token once; a contested token once",
          .timeLimit(.minutes(2)))
    func concurrentTokensOnSQLite() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("token-queue-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        let store = try SQLiteStore(path: folder.appendingPathComponent("store.sqlite").path)
        let h = ManagerHarness(store: store)
        let started = try await Self.startedDevices(h, 200)
        var rivals: [String] = []
        for _ in 0..<40 { rivals.append(try await h.device()) }

        // Every device reports its token twice, all at once, through the facade; pairs of rivals adopt activities
        // of their own with one token per pair at the same time.
        enum Outcome: Sendable { case view(String, ActivityView), refused(String, ServiceError.Code) }
        let outcomes = try await withThrowingTaskGroup(of: Outcome.self) { group in
            for registration in started + started {
                group.addTask {
                    .view(registration.activityId, try await h.service.putActivity(
                        activityId: registration.activityId, deviceId: registration.deviceId, matchId: "m",
                        updateToken: registration.token, environment: .production))
                }
            }
            for (n, rival) in rivals.enumerated() {
                group.addTask {
                    do throws(ServiceError) {
                        return .view("rival", try await h.service.putActivity(
                            activityId: "app-rival-\(n)", deviceId: rival, matchId: "m",
                            updateToken: F.token(0xcc, n / 2), environment: .production))
                    } catch {
                        return .refused("rival", error.code)
                    }
                }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }

        var views: [String: [ActivityView]] = [:]
        var refusals: [ServiceError.Code] = []
        for outcome in outcomes {
            switch outcome {
            case .view(let key, let view): views[key, default: []].append(view)
            case .refused(_, let code): refusals.append(code)
            }
        }
        for device in started {
            #expect(views[device.activityId]?.count == 2)
            #expect(views[device.activityId]?.allSatisfy { $0.state == "active" } == true)
        }
        #expect(views["rival"]?.count == rivals.count / 2, "one rival of each pair got the token")
        #expect(refusals == Array(repeating: .conflict, count: rivals.count / 2))
        let open = try await store.openActivities()
        #expect(open.count == started.count + rivals.count / 2)
        #expect(Set(open.compactMap(\.updateToken)).count == open.count, "no token held twice")
        for registration in started {
            #expect(try await store.activity(updateToken: registration.token)?.activityId == registration.activityId)
        }
    }
}
