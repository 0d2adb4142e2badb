import Foundation
import Logging
import MatchcastCore
import MatchcastDelivery
import MatchcastService
import MatchcastStore
import MatchcastTesting
import Synchronization

/// A wall clock that moves only when a test moves it: the `now` of the manager and the facade.
final class ManagerTestClock: Sendable {
    static let epoch = Date(timeIntervalSince1970: 1_800_000_000)

    private let current: Mutex<Date>
    /// Seconds the clock moves on by itself each time it is read (0: never), as a wall clock does while code runs.
    private let step: Double

    init(_ start: Date = ManagerTestClock.epoch, step: Double = 0) {
        current = Mutex(start)
        self.step = step
    }

    var now: Date {
        current.withLock { now in
            defer { now = now.addingTimeInterval(step) }
            return now
        }
    }

    /// Whole Unix seconds of `now`, as payload timestamps carry them.
    var unix: Int { Int(now.timeIntervalSince1970) }

    func advance(by seconds: Double) {
        current.withLock { $0 = $0.addingTimeInterval(seconds) }
    }

    /// The closure the manager and the facade read time from.
    var reader: @Sendable () -> Date { { [self] in self.now } }
}

/// A `LiveActivityService` and its `LifecycleManager` driven by hand: no pollers, no ticker, a
/// capturing sink, a hand-moved clock.
struct ManagerHarness: Sendable {
    let store: any MatchcastStore
    let sink: CapturingSink
    let clock: ManagerTestClock
    let service: LiveActivityService

    var lifecycle: LifecycleManager { service.lifecycle }

    init(
        store: any MatchcastStore = InMemoryStore(), clock: ManagerTestClock = ManagerTestClock(),
        policy: ActivityPolicy = ActivityPolicy(coalesceInterval: .seconds(10)),
        spacing: Duration = .seconds(5), seed: UInt64 = 7, metrics: BrokerMetrics = BrokerMetrics(),
        deviceSecretCapacity: Int = DeviceSecretCache.defaultCapacity, besides: [any DeliverySink] = [],
        sinksTake: @escaping @Sendable (PushTarget.Kind) -> Bool = { _ in true },
        otherApps: [AppCatalog.App] = []
    ) {
        let logger = Logger(label: "test.lifecycle", factory: { _ in SwiftLogNoOpLogHandler() })
        let sink = CapturingSink()
        let dispatcher = DeliveryDispatcher(sinks: [sink] + besides, metrics: metrics, logger: logger)
        let settings = BrokerSettings(activityPolicy: policy, pushToStartSpacing: spacing, seed: seed, otherApps: otherApps)
        let manager = LifecycleManager(
            store: store, dispatcher: dispatcher, settings: settings, metrics: metrics, now: clock.reader, logger: logger)
        self.store = store
        self.sink = sink
        self.clock = clock
        service = LiveActivityService(
            store: store, lifecycle: manager, sinksTake: { kind, _ in sinksTake(kind) }, apps: settings.apps,
            now: clock.reader, metrics: metrics,
            deviceSecretCapacity: deviceSecretCapacity, logger: logger)
    }

    // MARK: Deliveries

    var deliveries: [Delivery] { sink.deliveries }

    /// Deliveries made after `mark` (a count taken earlier from `deliveries`).
    func deliveries(since mark: Int) -> [Delivery] { Array(sink.deliveries.dropFirst(mark)) }

    func deliveries(_ event: ActivityEvent, since mark: Int = 0) -> [Delivery] {
        deliveries(since: mark).filter { $0.payload.aps.event == event }
    }

    // MARK: Set-up steps

    /// A registered device, with a push-to-start token when one is given.
    func device(pushToStart token: String? = nil) async throws -> String {
        let registration = try await service.registerDevice()
        if let token {
            try await service.setPushToStartToken(deviceId: registration.deviceId, token: token, environment: .production)
        }
        return registration.deviceId
    }

    func ingest(_ snapshot: MatchSnapshot, every interval: Duration = .seconds(10)) async throws {
        try await lifecycle.ingest(snapshot, pollInterval: interval)
    }

    @discardableResult
    func tick() async throws -> Date? {
        try await lifecycle.tick()
    }

    /// A device whose activity for `matchId` the broker started by push-to-start and whose update
    /// token the app then reported: `active`. The match must already be live.
    func activeDevice(matchId: String, pushToStart: String, updateToken: String) async throws -> (deviceId: String, activityId: String) {
        let deviceId = try await device(pushToStart: pushToStart)
        let follow = try await service.follow(deviceId: deviceId, matchId: matchId)
        guard let activityId = follow.activityId, follow.activityState == "starting" else {
            throw ManagerHarnessFailure("the follow did not start: \(follow)")
        }
        let view = try await service.putActivity(
            activityId: activityId, deviceId: deviceId, matchId: matchId, updateToken: updateToken, environment: .production)
        guard view.state == "active" else { throw ManagerHarnessFailure("the activity is not active: \(view)") }
        return (deviceId, activityId)
    }
}

struct ManagerHarnessFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// A store that passes every call to an in-memory store, but can fail `saveMatch` on demand and
/// hold `pushToStartToken`, `saveActivity`, `openHolders` or one match's saves at a gate, to reach interleavings a test
/// cannot otherwise pin down.
final class ManagerScriptedStore: MatchcastStore {
    let base = InMemoryStore()
    /// How many of the next `saveMatch` calls fail.
    let saveMatchFailures = Mutex(0)
    let pushToStartGate = ManagerTestGate()
    let saveActivityGate = ManagerTestGate()
    let openHoldersGate = ManagerTestGate()
    /// Holds, while armed, an operation's save (`saveActivities(_:enqueue:)`) of the match `enqueueGateMatch` names.
    let enqueueGate = ManagerTestGate()
    let enqueueGateMatch = Mutex<String?>(nil)
    /// The size of each `saveActivities` (without deliveries) call, in order.
    let savedBatches = Mutex<[Int]>([])
    /// The activities of each `saveActivities(_:enqueue:)` call (an operation's save), in order.
    let savedWithDeliveries = Mutex<[[String]]>([])

    init() {}

    func createDevice(_ device: DeviceRecord) async throws(StoreError) { try await base.createDevice(device) }
    func device(id: String) async throws(StoreError) -> DeviceRecord? { await base.device(id: id) }
    func deleteDevice(id: String) async throws(StoreError) -> Bool { await base.deleteDevice(id: id) }
    func setPushToStartToken(_ record: PushToStartTokenRecord) async throws(StoreError) {
        try await base.setPushToStartToken(record)
    }
    func pushToStartToken(deviceId: String) async throws(StoreError) -> PushToStartTokenRecord? {
        await pushToStartGate.pass()
        return await base.pushToStartToken(deviceId: deviceId)
    }
    func pushToStartTokenHolder(token: String) async throws(StoreError) -> String? {
        await base.pushToStartTokenHolder(token: token)
    }

    func removePushToStartToken(token: String) async throws(StoreError) -> String? {
        await base.removePushToStartToken(token: token)
    }
    func addFollow(_ follow: FollowRecord) async throws(StoreError) -> Bool { try await base.addFollow(follow) }
    func removeFollow(deviceId: String, matchId: String) async throws(StoreError) -> Bool {
        await base.removeFollow(deviceId: deviceId, matchId: matchId)
    }
    func follows(deviceId: String) async throws(StoreError) -> [FollowRecord] { await base.follows(deviceId: deviceId) }
    func followers(matchId: String) async throws(StoreError) -> [FollowRecord] { await base.followers(matchId: matchId) }
    func followedMatchIds() async throws(StoreError) -> [String] { await base.followedMatchIds() }
    func saveActivity(_ record: ActivityRecord) async throws(StoreError) {
        await saveActivityGate.pass()
        try await base.saveActivity(record)
    }
    func saveActivities(_ records: [ActivityRecord]) async throws(StoreError) {
        savedBatches.withLock { $0.append(records.count) }
        try await base.saveActivities(records)
    }
    func saveActivities(_ records: [ActivityRecord], enqueue deliveries: [Delivery]) async throws(StoreError) {
        savedWithDeliveries.withLock { $0.append(records.map(\.activityId)) }
        if let matchId = enqueueGateMatch.withLock({ $0 }),
           records.contains(where: { $0.matchId == matchId }) || deliveries.contains(where: { $0.matchId == matchId }) {
            await enqueueGate.pass()
        }
        try await base.saveActivities(records, enqueue: deliveries)
    }
    func queuedDeliveries(limit: Int) async throws(StoreError) -> [Delivery] { await base.queuedDeliveries(limit: limit) }
    func removeQueuedDeliveries(ids: [String]) async throws(StoreError) { await base.removeQueuedDeliveries(ids: ids) }
    func queuedDeliveryCount() async throws(StoreError) -> Int { await base.queuedDeliveryCount() }
    func recordDeadLetters(_ letters: [DeadLetter]) async throws(StoreError) { await base.recordDeadLetters(letters) }
    func deadLetters(limit: Int) async throws(StoreError) -> [DeadLetter] { await base.deadLetters(limit: limit) }
    func recordTokenRefusal(_ refusal: TokenRefusal) async throws(StoreError) { await base.recordTokenRefusal(refusal) }
    func tokenRefusals(deviceId: String) async throws(StoreError) -> [TokenRefusal] { await base.tokenRefusals(deviceId: deviceId) }
    func noteUpdateTokens(_ sightings: [UpdateTokenSighting], now: Date) async throws(StoreError) {
        await base.noteUpdateTokens(sightings, now: now)
    }
    func updateTokenSightings(deviceId: String) async throws(StoreError) -> [UpdateTokenSighting] {
        await base.updateTokenSightings(deviceId: deviceId)
    }
    func activity(id: String) async throws(StoreError) -> ActivityRecord? { await base.activity(id: id) }
    func activities(matchId: String) async throws(StoreError) -> [ActivityRecord] { await base.activities(matchId: matchId) }
    func activities(deviceId: String) async throws(StoreError) -> [ActivityRecord] {
        await base.activities(deviceId: deviceId)
    }
    func activity(updateToken: String) async throws(StoreError) -> ActivityRecord? {
        await base.activity(updateToken: updateToken)
    }
    func openHolders(updateTokens: [String]) async throws(StoreError) -> [String: String] {
        await openHoldersGate.pass()
        return try await base.openHolders(updateTokens: updateTokens)
    }
    func deleteActivity(id: String) async throws(StoreError) -> Bool { await base.deleteActivity(id: id) }
    func openActivities() async throws(StoreError) -> [ActivityRecord] { await base.openActivities() }
    func saveMatch(_ record: MatchRecord) async throws(StoreError) {
        let fail = saveMatchFailures.withLock { count in
            guard count > 0 else { return false }
            count -= 1
            return true
        }
        if fail { throw StoreError.database }
        try await base.saveMatch(record)
    }
    func match(id: String) async throws(StoreError) -> MatchRecord? { await base.match(id: id) }
    func matches() async throws(StoreError) -> [MatchRecord] { await base.matches() }
    func deleteMatch(id: String) async throws(StoreError) -> Bool { await base.deleteMatch(id: id) }
    func ping() async throws(StoreError) { await base.ping() }
    func census() async throws(StoreError) -> StoreCensus { await base.census() }
}

/// Holds the first caller that passes while armed until the test releases it.
final class ManagerTestGate: Sendable {
    private struct State {
        var armed = false
        var held: CheckedContinuation<Void, Never>?
        var wasHit = false
        var dismantled = false
        var hitWaiter: CheckedContinuation<Void, Never>?
    }

    private let state = Mutex(State())

    /// The next caller of `pass()` will wait for `release()`.
    func arm() { state.withLock { $0.armed = true } }

    func pass() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let (held, hitWaiter) = state.withLock { state -> (Bool, CheckedContinuation<Void, Never>?) in
                guard state.armed else { return (false, nil) }
                state.armed = false
                state.held = continuation
                state.wasHit = true
                defer { state.hitWaiter = nil }
                return (true, state.hitWaiter)
            }
            if held {
                hitWaiter?.resume()
            } else {
                continuation.resume()
            }
        }
    }

    /// Returns once a caller is held at the gate.
    func waitUntilHit() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let already = state.withLock { state in
                if state.wasHit || state.dismantled { return true }
                state.hitWaiter = continuation
                return false
            }
            if already { continuation.resume() }
        }
    }

    /// Whether a caller was held at the gate.
    var wasHit: Bool { state.withLock { $0.wasHit } }

    /// Holds no one from now on, and lets a pending `waitUntilHit()` return: for when the code under
    /// test finished without ever passing the gate (so a test cannot hang on it).
    func dismantle() {
        let waiter = state.withLock { state in
            state.armed = false
            state.dismantled = true
            defer { state.hitWaiter = nil }
            return state.hitWaiter
        }
        waiter?.resume()
    }

    /// Lets the held caller go on.
    func release() {
        let held = state.withLock { state in
            defer { state.held = nil }
            return state.held
        }
        held?.resume()
    }
}
