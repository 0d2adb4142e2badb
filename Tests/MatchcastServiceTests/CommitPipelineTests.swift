import Foundation
import MatchcastCore
import MatchcastStore
import Synchronization
import Testing
@testable import MatchcastService

/// What a fake store saw of a `CommitPipeline`: each save, with the first one held until the test lets it go, so the
/// chunks added meanwhile are known to wait behind it.
private final class HeldSaves: Sendable {
    struct Save: Sendable {
        let ids: [String]
        let deliveryIds: [String]
        let share: FanOutShare?
    }

    private struct State {
        var saves: [Save] = []
        var sent: [[String]] = []
        var gate: CheckedContinuation<Void, Never>?
        var released = false
        var failOn: Int?
    }

    private let state = Mutex(State())
    private let firstStarted: AsyncStream<Void>.Continuation
    private let firstSaveStarted: AsyncStream<Void>

    init(failOn: Int? = nil) {
        (firstSaveStarted, firstStarted) = AsyncStream.makeStream(of: Void.self)
        state.withLock { $0.failOn = failOn }
    }

    var saves: [Save] { state.withLock { $0.saves } }

    /// Returns once the first save has started (it is then held until `release`).
    func firstSaveHeld() async {
        var started = firstSaveStarted.makeAsyncIterator()
        await started.next()
    }
    var sent: [[String]] { state.withLock { $0.sent } }

    func pipeline(groupLimit: Int = 8 * 1024, window: Int = 64 * 1024) -> CommitPipeline {
        CommitPipeline(
            groupLimit: groupLimit, window: window,
            save: { records, deliveries, share async throws(ServiceError) in
                try await self.save(records, deliveries, share)
            },
            send: { deliveries in self.state.withLock { $0.sent.append(deliveries.map(\.id)) } })
    }

    /// Lets the first save finish.
    func release() {
        let gate = state.withLock { state -> CheckedContinuation<Void, Never>? in
            state.released = true
            defer { state.gate = nil }
            return state.gate
        }
        gate?.resume()
    }

    private func save(_ records: [ActivityRecord], _ deliveries: [Delivery], _ share: FanOutShare?) async throws(ServiceError) {
        let (number, fail) = state.withLock { state in
            state.saves.append(Save(ids: records.map(\.activityId), deliveryIds: deliveries.map(\.id), share: share))
            return (state.saves.count, state.failOn == state.saves.count)
        }
        if number == 1 {
            firstStarted.yield()
            await withCheckedContinuation { continuation in
                let go = state.withLock { state -> Bool in
                    if state.released { return true }
                    state.gate = continuation
                    return false
                }
                if go { continuation.resume() }
            }
        }
        if fail { throw ServiceError(.unavailable, "save \(number) failed") }
    }
}

/// Chunks of one fan-out, as the manager hands them on: ids `a0000`… in order, `size` to a chunk, all moved to one
/// state unless told otherwise.
private enum PipelineFixture {
    static let now = Date(timeIntervalSince1970: 1_800_000_000)

    static func id(_ n: Int) -> String { "a" + String(format: "%04d", n) }

    static func record(_ n: Int) -> ActivityRecord {
        let lifecycle = ActivityLifecycle.adopted(activityId: id(n), matchId: "m", updateToken: "tok\(n)", now: now)
        return ActivityRecord(deviceId: "d\(n)", environment: .production, lifecycle: lifecycle, updatedAt: now)
    }

    static func delivery(_ n: Int) -> Delivery {
        let state = ContentState(
            status: "live", statusText: "Live", home: .init(name: "MUN", score: "1"),
            away: .init(name: "LIV", score: "0"), summary: "MUN v LIV")
        return Delivery(
            id: "del-\(n)", matchId: "m", activityId: id(n),
            target: PushTarget(kind: .updateToken, value: "tok\(n)"),
            apns: APNsHeaders(topic: "com.example.app.push-type.liveactivity", priority: 10, expiration: 1_800_003_600),
            payload: try! PushPayload(APS(timestamp: 1_800_000_000, event: .update, contentState: state, staleDate: 1_800_000_300)))
    }

    /// Chunk `index` of `count`, each of `size` activities; the last one's range runs to the end.
    static func add(_ index: Int, of count: Int, size: Int, to pipeline: CommitPipeline, updatedAt: Date = now) async {
        let numbers = (index * size)..<((index + 1) * size)
        let state = FanOutState(
            lastTimestamp: 1, sent: nil, sentAt: nil, sentStaleDate: nil, held: nil, heldStaleness: nil, updatedAt: updatedAt)
        let share = FanOutShare(
            state: state, moved: Array(0..<size), from: id(numbers.lowerBound),
            through: index == count - 1 ? nil : id(numbers.upperBound - 1))
        await pipeline.add(records: numbers.map(record), deliveries: numbers.map(delivery), share: share)
    }
}

@Suite("CommitPipeline: chunks saved in order, those waiting behind a save saved together")
struct CommitPipelineTests {
    fileprivate typealias F = PipelineFixture

    @Test("the first chunk is saved alone; the three added while it saves are saved as one, their ranges joined")
    func chunksWaitingBehindASaveAreJoined() async throws {
        let store = HeldSaves()
        let pipeline = store.pipeline()
        await F.add(0, of: 4, size: 3, to: pipeline)
        await store.firstSaveHeld()
        for index in 1..<4 { await F.add(index, of: 4, size: 3, to: pipeline) }
        store.release()
        try await pipeline.finish()

        let saves = store.saves
        #expect(saves.map(\.ids) == [(0..<3).map(F.id), (3..<12).map(F.id)])
        #expect(saves.map(\.deliveryIds) == [(0..<3).map { "del-\($0)" }, (3..<12).map { "del-\($0)" }])
        #expect(saves[1].share?.from == F.id(3))
        #expect(saves[1].share?.through == nil, "the joined range runs to the end, as the last chunk's did")
        #expect(saves[1].share?.moved == Array(0..<9), "each chunk's moved records keep their place in the group")
        #expect(store.sent.flatMap { $0 } == (0..<12).map { "del-\($0)" }, "everything sent once, in order")
    }

    @Test("the first chunk is saved alone even when the others are queued before the saver takes it")
    func firstChunkAloneWhateverIsPending() async throws {
        let store = HeldSaves()
        let pipeline = store.pipeline()
        for index in 0..<4 { await F.add(index, of: 4, size: 3, to: pipeline) }
        store.release()
        try await pipeline.finish()

        #expect(store.saves.map(\.ids) == [(0..<3).map(F.id), (3..<12).map(F.id)])
        #expect(store.sent.flatMap { $0 } == (0..<12).map { "del-\($0)" })
    }

    @Test("a group stops at the limit; chunks of another state start a group of their own")
    func groupsKeepToTheLimitAndTheState() async throws {
        let store = HeldSaves()
        let pipeline = store.pipeline(groupLimit: 6)
        await F.add(0, of: 6, size: 2, to: pipeline)
        await store.firstSaveHeld()
        for index in 1..<5 { await F.add(index, of: 6, size: 2, to: pipeline) }
        await F.add(5, of: 6, size: 2, to: pipeline, updatedAt: F.now.addingTimeInterval(1))
        store.release()
        try await pipeline.finish()

        let saves = store.saves
        #expect(saves.map(\.ids.count) == [2, 6, 2, 2], "chunks 1–3 fill a group of 6; chunk 4 starts the next")
        #expect(saves.map { $0.share?.through } == [F.id(1), F.id(7), F.id(9), nil])
        #expect(saves.flatMap(\.ids) == (0..<12).map(F.id))
        #expect(store.sent.flatMap { $0 } == (0..<12).map { "del-\($0)" })
    }

    @Test("undescribed chunks join; a described one does not join an undescribed one")
    func describedAndUndescribedDoNotMix() {
        let plain = (0..<2).map { n in ChunkGroup(records: [F.record(n)], deliveries: [F.delivery(n)], share: nil) }
        var groups = ChunkGroup.joined(plain, limit: 10)
        #expect(groups.map { $0.records.map(\.activityId) } == [[F.id(0), F.id(1)]])

        let state = FanOutState(
            lastTimestamp: 1, sent: nil, sentAt: nil, sentStaleDate: nil, held: nil, heldStaleness: nil, updatedAt: F.now)
        let described = ChunkGroup(
            records: [F.record(2)], deliveries: [], share: FanOutShare(state: state, moved: [0], from: F.id(2), through: nil))
        groups = ChunkGroup.joined(plain + [described], limit: 10)
        #expect(groups.map(\.records.count) == [2, 1])
        #expect(groups.map { $0.share == nil } == [true, false])
    }

    @Test("a save that fails stops the chunks after it; what was saved before it is sent, and finish throws")
    func aFailedSaveStopsTheRest() async throws {
        let store = HeldSaves(failOn: 2)
        let pipeline = store.pipeline(groupLimit: 3)
        await F.add(0, of: 4, size: 3, to: pipeline)
        await store.firstSaveHeld()
        for index in 1..<4 { await F.add(index, of: 4, size: 3, to: pipeline) }
        store.release()
        await #expect(throws: ServiceError.self) { try await pipeline.finish() }

        #expect(store.saves.map(\.ids) == [(0..<3).map(F.id), (3..<6).map(F.id)], "nothing saved after the failure")
        #expect(store.sent.flatMap { $0 } == (0..<3).map { "del-\($0)" }, "only the first chunk, saved, is sent")
    }

    @Test("add waits while more than the window is in flight, and returns once the chunks ahead are saved and sent")
    func addWaitsForTheWindow() async throws {
        let store = HeldSaves()
        // A chunk of 3 weighs 6 (3 activities, 3 deliveries): the first fits the window, the second does not.
        let pipeline = store.pipeline(window: 6)
        await F.add(0, of: 2, size: 3, to: pipeline)
        await store.firstSaveHeld()
        let returned = Mutex(false)
        let second = Task {
            await F.add(1, of: 2, size: 3, to: pipeline)
            returned.withLock { $0 = true }
        }
        // The first save is held: nothing is sent, so the second chunk cannot fit however long this waits.
        try await Task.sleep(for: .milliseconds(200))
        #expect(!returned.withLock { $0 }, "the second add returned with 12 in flight, over a window of 6")
        #expect(store.saves.count == 1)
        store.release()
        await second.value
        try await pipeline.finish()
        #expect(store.saves.flatMap(\.ids) == (0..<6).map(F.id))
        #expect(store.sent.flatMap { $0 } == (0..<6).map { "del-\($0)" }, "everything sent once, in order")
    }

    @Test("a save that fails lets the adds waiting for the window go: they return, and nothing after it is saved")
    func aFailedSaveLetsWaitingAddsGo() async throws {
        let store = HeldSaves(failOn: 1)
        let pipeline = store.pipeline(window: 6)
        await F.add(0, of: 3, size: 3, to: pipeline)
        await store.firstSaveHeld()
        let second = Task { await F.add(1, of: 3, size: 3, to: pipeline) }
        try await Task.sleep(for: .milliseconds(200))  // the second add is, by now, waiting for the window
        store.release()
        await second.value
        await F.add(2, of: 3, size: 3, to: pipeline)  // after the failure: dropped at once, never waits
        await #expect(throws: ServiceError.self) { try await pipeline.finish() }
        #expect(store.saves.map(\.ids) == [(0..<3).map(F.id)], "nothing saved after the failure")
        #expect(store.sent.isEmpty)
    }

    /// Set by a test around its calls: seen inside the save and the send only when they run on the test's task (a
    /// detached task inherits no task-local value).
    @TaskLocal static var caller: String?

    @Test("a fan-out of one chunk is saved and sent by finish on the caller's task; a chunk with more after it is not")
    func aLoneChunkRunsOnTheCallersTask() async throws {
        let seen = Mutex<[String]>([])
        func pipeline(failing: Bool = false) -> CommitPipeline {
            CommitPipeline(
                save: { records, _, _ async throws(ServiceError) in
                    seen.withLock { $0.append("save \(records.count) on \(Self.caller ?? "another task")") }
                    if failing { throw ServiceError(.unavailable, "save failed") }
                },
                send: { deliveries in seen.withLock { $0.append("send \(deliveries.count) on \(Self.caller ?? "another task")") } })
        }
        try await Self.$caller.withValue("the caller") {
            let lone = pipeline()
            await lone.add(records: [F.record(0), F.record(1)], deliveries: [F.delivery(0), F.delivery(1)], last: true)
            #expect(seen.withLock { $0 }.isEmpty, "nothing saved before finish")
            try await lone.finish()
            #expect(seen.withLock { $0 } == ["save 2 on the caller", "send 2 on the caller"])

            // A save that fails: finish throws, nothing is sent; a second finish (as a failed fan-out calls it) throws
            // the same error again without saving again, as after a failed save of the pipeline's own task.
            seen.withLock { $0 = [] }
            let failing = pipeline(failing: true)
            await failing.add(records: [F.record(0)], deliveries: [F.delivery(0)], last: true)
            await #expect(throws: ServiceError.self) { try await failing.finish() }
            #expect(seen.withLock { $0 } == ["save 1 on the caller"])
            await #expect(throws: ServiceError.self) { try await failing.finish() }
            #expect(seen.withLock { $0 } == ["save 1 on the caller"])

            // Two chunks: the first is saved by the pipeline's own task, and so is the last one after it.
            seen.withLock { $0 = [] }
            let two = pipeline()
            await two.add(records: [F.record(0)], deliveries: [F.delivery(0)])
            await two.add(records: [F.record(1)], deliveries: [F.delivery(1)], last: true)
            try await two.finish()
            let steps = seen.withLock { $0 }
            #expect(steps.filter { $0.hasPrefix("save") }.allSatisfy { $0.hasSuffix("another task") })
            #expect(steps.filter { $0.hasPrefix("save") }.map { $0.split(separator: " ")[1] }.reduce(0) { $0 + Int($1)! } == 2)
        }
    }

    @Test("finish on a pipeline that was given nothing returns at once")
    func emptyPipelineFinishes() async throws {
        let store = HeldSaves()
        try await store.pipeline().finish()
        #expect(store.saves.isEmpty)
        #expect(store.sent.isEmpty)
    }
}
