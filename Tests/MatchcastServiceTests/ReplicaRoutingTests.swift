import Foundation
import Logging
import MatchcastCore
@testable import MatchcastService
@testable import MatchcastStore
import MatchcastTesting
import Testing

/// Two replicas in one process on one PostgreSQL schema: who runs a match, how a change made through the other
/// replica reaches it, what a takeover resends, and that a replica which lost a match can no longer write for it.
@Suite(.enabled(if: ScratchPostgresDatabase.isConfigured, ScratchPostgresDatabase.skipMessage), .serialized)
struct ReplicaRoutingTests {
    /// Apple's channel management API as both replicas reach it: every channel created and deleted, in order.
    actor RecordingChannels: ChannelManagement {
        private(set) var created: [String] = []
        private(set) var deleted: [String] = []

        func createChannel() async throws -> String {
            let id = "Y2hhbm5lbC0" + String(created.count + 1)
            created.append(id)
            return id
        }

        func deleteChannel(_ channelId: String) async throws { deleted.append(channelId) }
    }

    /// One replica: its lifecycle (delivering inline to its own capturing sink), service and coordinator; in
    /// channel mode (a match gets a channel from its first follower on) with `channels`.
    struct Replica: Sendable {
        let name: String
        let sink = CapturingSink()
        let service: LiveActivityService
        let coordinator: ReplicaCoordinator
        let broadcast: BroadcastChannels?

        init(_ name: String, store: PostgresStore, leaseTTL: Duration, channels: RecordingChannels) async {
            self.init(name, store: store, leaseTTL: leaseTTL, channelsAt: channels)
            if let broadcast { await service.lifecycle.useBroadcastChannels(broadcast) }
        }

        init(_ name: String, store: PostgresStore, leaseTTL: Duration) {
            self.init(name, store: store, leaseTTL: leaseTTL, channelsAt: nil)
        }

        private init(_ name: String, store: PostgresStore, leaseTTL: Duration, channelsAt channels: RecordingChannels?) {
            self.name = name
            let logger = Logger(label: "test.replica.\(name)", factory: { _ in SwiftLogNoOpLogHandler() })
            let metrics = BrokerMetrics()
            let ownership = MatchOwnership(shared: .init(store: store, replicaId: name, leaseTTL: leaseTTL))
            let lifecycle = LifecycleManager(
                store: store, dispatcher: DeliveryDispatcher(sinks: [sink], metrics: metrics, logger: logger),
                ownership: ownership, settings: BrokerSettings(pushToStartSpacing: .zero, seed: name == "a" ? 1 : 2),
                metrics: metrics, now: { Date() }, logger: logger)
            service = LiveActivityService(
                store: store, lifecycle: lifecycle, metrics: metrics, commandAnswerTimeout: .seconds(30), logger: logger)
            coordinator = ReplicaCoordinator(service: service, clock: ContinuousClock(), logger: logger)
            broadcast = channels.map {
                BroadcastChannels(
                    client: $0, store: store, settings: BrokerSettings(pushToStartSpacing: .zero, seed: 3),
                    policy: ChannelPolicy(minFollowers: 1, deleteDelay: .zero), clock: ContinuousClock(), now: { Date() },
                    logger: logger)
            }
        }

        var ownership: MatchOwnership { service.lifecycle.ownership }

        func device(pushToStart: String?) async throws -> String {
            let id = try await service.registerDevice().deviceId
            if let pushToStart { try await service.setPushToStartToken(deviceId: id, token: pushToStart, environment: .production) }
            return id
        }
    }

    static func withStore(_ body: (PostgresStore) async throws -> Void) async throws {
        let url = try #require(ScratchPostgresDatabase.serverURL)
        var configuration = try #require(try StoreURL(url).postgresConfiguration)
        configuration.schema = "r_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "")
        configuration.leaseTimeout = .seconds(60)
        configuration.maximumConnections = 8
        let store = try await PostgresStore.open(configuration)
        do {
            try await withStoreRunning(store) { try await body(store) }
        } catch {
            try? await store.dropSchema()
            throw error
        }
        try await store.dropSchema()
    }

    @Test("a follow and a token sent to the replica that does not run the match reach the one that does")
    func commandsReachTheOwner() async throws {
        try await Self.withStore { store in
            let a = Replica("a", store: store, leaseTTL: .seconds(30))
            let b = Replica("b", store: store, leaseTTL: .seconds(30))
            let match = "m-routing"
            // A is the first to touch the match: it claims it and runs it.
            let first = try await a.device(pushToStart: ManagerFixtures.pushToStart(1))
            _ = try await a.service.follow(deviceId: first, matchId: match)
            #expect(a.ownership.holds(match))
            try await a.service.lifecycle.ingest(ManagerFixtures.football(match, seq: 1), pollInterval: .seconds(10))
            #expect(a.sink.deliveries.filter { $0.payload.aps.event == .start }.count == 1)

            try await withThrowingDiscardingTaskGroup { group in
                group.addTask { try await a.coordinator.run() }
                // Through B, which does not hold the match: B posts, A runs it, B answers with A's result.
                let second = try await b.device(pushToStart: nil)
                let follow = try await b.service.follow(deviceId: second, matchId: match)
                #expect(!b.ownership.holds(match))
                #expect(follow.activityState == "waiting")
                #expect(b.sink.deliveries.isEmpty)
                // The token arrives through B too: A starts the waiting activity (the match is live).
                try await b.service.setPushToStartToken(deviceId: second, token: ManagerFixtures.pushToStart(2), environment: .production)
                let started = try await eventually(within: 30) {
                    a.sink.deliveries.contains { $0.payload.aps.event == .start && $0.target.value == ManagerFixtures.pushToStart(2) }
                }
                #expect(started, "A starts the second device's activity")
                // APNs refuses that push-to-start token, reported through B: A takes the start back (it never
                // reached the phone), and the device's next token, through B again, starts the activity anew.
                let activityId = try #require(follow.activityId)
                #expect(try await b.service.reportDeadToken(ManagerFixtures.pushToStart(2), reason: "BadDeviceToken"))
                let waiting = try await eventually(within: 30) { try await store.activity(id: activityId)?.phase == .waiting }
                #expect(waiting, "A took the start back")
                try await b.service.setPushToStartToken(deviceId: second, token: ManagerFixtures.pushToStart(4), environment: .production)
                let restarted = try await eventually(within: 30) {
                    a.sink.deliveries.contains { $0.payload.aps.event == .start && $0.target.value == ManagerFixtures.pushToStart(4) }
                }
                #expect(restarted, "A starts it again with the new token")
                // Its update token, through B: A runs the activity from now on.
                let view = try await b.service.putActivity(
                    activityId: activityId, deviceId: second, matchId: match, updateToken: ManagerFixtures.update(2),
                    environment: .production)
                #expect(view.state == "active")
                // An unfollow through B ends it, and A sends the end.
                try await b.service.unfollow(deviceId: second, matchId: match)
                #expect(a.sink.deliveries.contains { $0.payload.aps.event == .end && $0.activityId == activityId })
                #expect(b.sink.deliveries.isEmpty)
                // A refusal made by A reaches B's caller as the same error.
                await #expect(throws: ServiceError(.forbidden, "activity belongs to another device")) {
                    try await b.service.putActivity(
                        activityId: activityId, deviceId: first, matchId: match, updateToken: ManagerFixtures.update(3),
                        environment: .production)
                }
                group.cancelAll()
            }
        }
    }

    @Test("two processes configured with one replica id are two lease owners: only one runs a match, the other's writes are fenced off")
    func oneReplicaIdTwice() async throws {
        try await Self.withStore { store in
            let first = Replica("web-1", store: store, leaseTTL: .seconds(30))
            let twin = Replica("web-1", store: store, leaseTTL: .seconds(30))
            #expect(first.ownership.shared?.leaseOwner != twin.ownership.shared?.leaseOwner)
            let match = "m-twins"
            #expect(try await first.ownership.claim(match) == .gained(takenOver: false))
            // With the replica id as the owner, the twin's claim read as a renewal of its own lease: both ran the match.
            #expect(try await twin.ownership.claim(match) == .elsewhere)
            #expect(await twin.ownership.renewAll().isEmpty)
            #expect(!twin.ownership.holds(match))
            // Nor can the twin write under the first's lease, even naming its generation.
            let lease = try #require(try await store.leases().first { $0.matchId == match })
            #expect(lease.owner == first.ownership.shared?.leaseOwner)
            let twinOwner = try #require(twin.ownership.shared?.leaseOwner)
            let device = try await first.device(pushToStart: ManagerFixtures.pushToStart(1))
            _ = try await first.service.follow(deviceId: device, matchId: match)
            try await first.service.lifecycle.ingest(ManagerFixtures.football(match, seq: 1), pollInterval: .seconds(10))
            var update = try #require(first.sink.deliveries.first)
            update.id = "dlv-twin"
            await #expect(throws: StoreError.self) {
                try await store.saveActivities([], enqueue: [update], fence: LeaseFence(owner: twinOwner, generations: [match: lease.generation]))
            }
        }
    }

    @Test("a dead replica's match is taken over: its outbox resent, its activities brought up to date, its writes fenced off")
    func takeoverResendsAndFences() async throws {
        try await Self.withStore { store in
            let a = Replica("a", store: store, leaseTTL: .seconds(2))
            let b = Replica("b", store: store, leaseTTL: .seconds(2))
            let match = "m-takeover"
            let device = try await a.device(pushToStart: ManagerFixtures.pushToStart(1))
            let follow = try await a.service.follow(deviceId: device, matchId: match)
            try await a.service.lifecycle.ingest(ManagerFixtures.football(match, seq: 1), pollInterval: .seconds(10))
            let activityId = try #require(follow.activityId)
            _ = try await a.service.putActivity(
                activityId: activityId, deviceId: device, matchId: match, updateToken: ManagerFixtures.update(1),
                environment: .production)
            try await a.service.lifecycle.ingest(ManagerFixtures.football(match, home: 1, seq: 2), pollInterval: .seconds(10))
            // A crash between saving and sending: an update A queued but never sent.
            let left = try #require(a.sink.deliveries.last)
            #expect(left.payload.aps.event == .update)
            try await store.saveActivities([], enqueue: [left])
            let sentByA = a.sink.deliveries.count

            // A stops renewing (dead). Once its lease expires, B's lease round takes the match.
            try await Task.sleep(for: .seconds(3))
            await b.coordinator.leaseRound()
            #expect(b.ownership.holds(match))
            #expect(b.sink.deliveries.contains { $0.id == left.id }, "the outbox A left goes out with the same id")
            #expect(!b.sink.deliveries.contains { $0.payload.aps.event == .start }, "nothing is started twice")

            // B runs the match now: a new score reaches the device through B.
            try await b.service.lifecycle.ingest(ManagerFixtures.football(match, home: 2, seq: 3), pollInterval: .seconds(10))
            #expect(b.sink.deliveries.contains { $0.activityId == activityId && $0.payload.aps.event == .update })

            // A wakes up believing it still runs the match: its write is refused, nothing is sent, it lets go.
            let before = try await store.activity(id: activityId)
            await #expect(throws: ServiceError.self) {
                try await a.service.lifecycle.ingest(
                    ManagerFixtures.football(match, home: 3, seq: 4), pollInterval: .seconds(10))
            }
            #expect(a.sink.deliveries.count == sentByA)
            #expect(!a.ownership.holds(match))
            let after = try await store.activity(id: activityId)
            #expect(after == before)
            let queued = try await store.queuedDeliveries(matchId: match)
            let sentByB = Set(b.sink.deliveries.map(\.id))
            #expect(queued.allSatisfy { sentByB.contains($0.id) }, "nothing of A's refused write was queued")
        }
    }

    /// Two replicas in channel mode with leases of 2 s, sharing one channel API; A runs `match`, live and followed
    /// by one device. Returns them and the channel the device's start named (the only one created).
    static func channelModeMatch(
        _ match: String, store: PostgresStore
    ) async throws -> (apns: RecordingChannels, a: Replica, b: Replica, channelId: String) {
        let apns = RecordingChannels()
        let a = await Replica("a", store: store, leaseTTL: .seconds(2), channels: apns)
        let b = await Replica("b", store: store, leaseTTL: .seconds(2), channels: apns)
        let device = try await a.device(pushToStart: ManagerFixtures.pushToStart(1))
        _ = try await a.service.follow(deviceId: device, matchId: match)
        try await a.service.lifecycle.ingest(ManagerFixtures.football(match, seq: 1), pollInterval: .seconds(10))
        let start = try #require(a.sink.deliveries.first { $0.payload.aps.event == .start })
        let channelId = try #require(start.payload.aps.inputPushChannel, "the start names the match's channel")
        #expect(await apns.created == [channelId])
        return (apns, a, b, channelId)
    }

    @Test("channel mode across replicas: the new owner of a dead replica's match broadcasts on its channel and deletes it at the end")
    func channelModeTakeover() async throws {
        try await Self.withStore { store in
            let match = "m-channel"
            let (apns, _, b, channelId) = try await Self.channelModeMatch(match, store: store)

            // A dies. Once its lease expires, B takes the match, and its channel with it.
            try await Task.sleep(for: .seconds(3))
            await b.coordinator.leaseRound()
            #expect(b.ownership.holds(match))
            let goal = MatchEvent(id: "goal-1", type: "goal", at: Date(), text: "GOAL!")
            try await b.service.lifecycle.ingest(
                ManagerFixtures.football(match, home: 1, clock: "9'", seq: 2, events: [goal]), pollInterval: .seconds(10))
            let onChannel = PushTarget(kind: .channel, value: channelId)
            #expect(b.sink.deliveries.contains { $0.target == onChannel && $0.payload.aps.event == .update }, "the goal goes on A's channel")
            #expect(await apns.created == [channelId], "no second channel")
            #expect(!b.sink.deliveries.contains { $0.payload.aps.event == .start }, "nothing starts twice")

            // The final: the end goes on the channel. B keeps the match while the channel exists, deletes it, then
            // lets the match go.
            try await b.service.lifecycle.ingest(
                ManagerFixtures.football(match, .completed, home: 1, period: "FT", clock: nil, seq: 3, events: [goal]),
                pollInterval: .seconds(10))
            #expect(b.sink.deliveries.contains { $0.target == onChannel && $0.payload.aps.event == .end })
            await b.coordinator.leaseRound()
            #expect(b.ownership.holds(match), "a match whose channel still exists is not let go")
            let deleted = try await eventually(within: 30) {
                await b.broadcast?.deleteDue()
                return await apns.deleted == [channelId]
            }
            #expect(deleted, "B deletes the channel A created")
            #expect(try await store.channel(matchId: match) == nil)
            await b.coordinator.leaseRound()
            #expect(!b.ownership.holds(match), "then the match is let go")
            #expect(await apns.created == [channelId])
        }
    }

    @Test("a replica that dies after a channel-mode match ended leaves its channel to the survivor, which deletes it")
    func channelOfAnEndedMatchOutlivesItsReplica() async throws {
        try await Self.withStore { store in
            let match = "m-channel-ended"
            let (apns, a, b, channelId) = try await Self.channelModeMatch(match, store: store)
            try await a.service.lifecycle.ingest(
                ManagerFixtures.football(match, .completed, period: "FT", clock: nil, seq: 2), pollInterval: .seconds(10))
            // A's own look at its matches: over, nothing open, but the channel is not deleted yet: A keeps it.
            await a.coordinator.leaseRound()
            #expect(a.ownership.holds(match))
            // A dies before deleting it. The channel is what makes the match need a replica now.
            #expect(try await store.matchesNeedingOwner().contains(match))
            try await Task.sleep(for: .seconds(3))
            await b.coordinator.leaseRound()
            #expect(b.ownership.holds(match))
            let deleted = try await eventually(within: 30) {
                await b.broadcast?.deleteDue()
                return await apns.deleted == [channelId]
            }
            #expect(deleted, "the survivor deletes the dead replica's channel")
            await b.coordinator.leaseRound()
            #expect(!b.ownership.holds(match))
            #expect(try await !store.matchesNeedingOwner().contains(match))
        }
    }
}
