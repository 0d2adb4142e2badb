import CoreMetrics
import Foundation
import Logging
import MatchcastCore
import MatchcastDelivery
import MatchcastStore
import ServiceLifecycle

/// Creates and deletes broadcast channels: Apple's channel management API, or a test double.
public protocol ChannelManagement: Sendable {
    /// A new Live Activity channel's id.
    func createChannel() async throws -> String
    /// Deletes a channel; a channel already gone counts as deleted.
    func deleteChannel(_ channelId: String) async throws
    /// Closes what it holds open; called when `BroadcastChannels` stops.
    func shutdown()
}

extension ChannelManagement {
    public func shutdown() {}
}

extension APNsChannelClient: ChannelManagement {
    public func createChannel() async throws -> String {
        try await create(storagePolicy: .mostRecent)
    }

    public func deleteChannel(_ channelId: String) async throws {
        try await delete(channelId: channelId)
    }
}

/// Broadcast channel mode (iOS 18): the matches that have a channel, and the channel's life around
/// them. What to do is decided by values (`ChannelPolicy.wantsChannel`, `MatchChannel`); this actor
/// executes: it creates the channel at APNs, turns the channel's pushes into deliveries, keeps every
/// channel in the store, and deletes it after the match (a `Service`: deletes are retried with
/// backoff, outside the lifecycle's gates, until APNs confirms; a channel is never
/// forgotten while it may still exist).
///
/// `LifecycleManager` calls it from inside the match's gate (`MatchGates`): `attach` on every fan-out
/// (the channel rides on the update, so the starts it causes carry `input-push-channel`),
/// `matchChanged` for the update's broadcast, `tick` for coalesced broadcasts and stale-date
/// refreshes, and `commit` after the operation's deliveries are in the outbox (a crash in between
/// repeats a broadcast, never loses one). A channel whose broadcast is not in the outbox yet is saved by
/// that `commit` only, never by this actor's own periodic save; should the operation fail instead,
/// `rollBack` reads it back from the store, so the broadcast goes out again.
public actor BroadcastChannels: Service {
    private let client: any ChannelManagement
    private let store: any MatchcastStore & ChannelStore
    private let policy: ChannelPolicy
    /// The broker's activity rules, which the channels' synthetic activities follow.
    private let activityPolicy: ActivityPolicy
    private let clock: any Clock<Duration>
    private let now: @Sendable () -> Date
    private let logger: Logger
    private let metricsFactory: any MetricsFactory
    private var builder: DeliveryBuilder
    private var channels: [String: MatchChannel] = [:]
    /// Channels changed since they were last saved.
    private var dirty: Set<String> = []
    /// Of those, the ones that made a broadcast the lifecycle has not yet put in the outbox: saved by its
    /// `commit` only (a channel stored as having broadcast what never reached the outbox would not broadcast it again),
    /// and not deleted before it.
    private var awaitingOutbox: Set<String> = []
    /// Whether `saveDirty` runs, and whether a call came while it ran (it looks again before it ends).
    private var saving = false
    private var saveAgain = false
    /// A failed create waits until then before it is tried again for the match.
    private var createRetryAt: [String: Date] = [:]
    /// How long `run` waits at most between looks (a channel that starts closing is seen within it).
    private let maxInterval: Duration
    /// The relay the broadcasts go out through (`watch(_:)`): a channel's delete waits for the end it still holds.
    private var relay: DeliveryRelay?

    public init(
        client: any ChannelManagement, store: any MatchcastStore & ChannelStore, settings: BrokerSettings,
        policy: ChannelPolicy, clock: any Clock<Duration>, now: @escaping @Sendable () -> Date,
        maxInterval: Duration = .seconds(5),
        metricsFactory: any MetricsFactory = MetricsSystem.factory, logger: Logger
    ) {
        self.client = client
        self.store = store
        self.policy = policy
        activityPolicy = settings.activityPolicy
        self.clock = clock
        self.now = now
        self.logger = logger
        self.maxInterval = maxInterval
        self.metricsFactory = metricsFactory
        // Ids of their own, reproducible from the broker's seed, apart from the lifecycle's.
        builder = DeliveryBuilder(bundleId: settings.bundleId, seed: settings.seed ^ 0x6368_616e_6e65_6c73)
    }

    // MARK: Queries

    /// The match's channel while it is open (what `GET /v1/matches/{id}` shows).
    public func channelId(matchId: String) -> String? {
        guard let channel = channels[matchId], channel.phase == .open else { return nil }
        return channel.channelId
    }

    /// Whether the match has a channel, open or waiting to be deleted.
    public func hasChannel(matchId: String) -> Bool { channels[matchId] != nil }

    /// Every channel known, open or waiting to be deleted, by match id.
    public func all() -> [String: MatchChannel] { channels }

    /// Whether a channel is being created at APNs now (the lifecycle waits for it).
    public var isCreating: Bool { creating > 0 }
    private var creating = 0

    // MARK: Called by LifecycleManager

    /// After a restart: every stored channel (the fan-outs that follow attach the open ones to their updates).
    public func restore() async throws(ServiceError) {
        let records: [MatchChannelRecord]
        do {
            records = try await store.channels()
        } catch {
            logger.error("cannot read broadcast channels", metadata: ["error": "\(error)"])
            throw ServiceError(.unavailable, "storage is unavailable (\(error.reason))")
        }
        for record in records { channels[record.matchId] = record.channel }
        gauge()
        let open = records.filter { $0.channel.phase == .open }.count
        logger.info("broadcast channels restored", metadata: ["open": "\(open)", "closing": "\(records.count - open)"])
    }

    /// A replica took the match over, or an operation on it failed: its stored channel, if any, replaces what
    /// this process knew of it.
    public func restore(matchId: String) async throws(ServiceError) {
        do {
            channels[matchId] = try await store.channel(matchId: matchId)?.channel
            dirty.remove(matchId)
            awaitingOutbox.remove(matchId)
        } catch {
            logger.error("cannot read the match's broadcast channel", metadata: ["match": "\(matchId)", "error": "\(error)"])
            throw ServiceError(.unavailable, "storage is unavailable (\(error.reason))")
        }
        gauge()
    }

    /// This replica no longer runs the match: its channel is the new owner's to broadcast to and delete.
    public func forget(matchId: String) {
        channels[matchId] = nil
        dirty.remove(matchId)
        awaitingOutbox.remove(matchId)
        gauge()
    }

    /// The update as the match's activities should see it: carrying the match's open channel, which is
    /// created now when the rule says so (at most one try per `createRetryInterval`; a failed create
    /// leaves the match per token). `followers`: the match's open activities.
    public func attach(_ update: MatchUpdate, matchId: String, followers: Int) async -> MatchUpdate {
        var update = update
        if let channel = channels[matchId] {
            update.channelId = channel.phase == .open ? channel.channelId : nil
            return update
        }
        update.channelId = nil
        guard policy.wantsChannel(status: update.status, followers: followers) else { return update }
        let moment = now()
        if let retryAt = createRetryAt[matchId], moment < retryAt { return update }
        let channelId: String
        creating += 1
        defer { creating -= 1 }
        do {
            channelId = try await client.createChannel()
        } catch {
            createRetryAt[matchId] = moment.addingTimeInterval(policy.createRetryInterval.seconds)
            count("create_failed")
            logger.warning("broadcast channel not created; the match goes per token for now", metadata: [
                "match": "\(matchId)", "error": "\(error)", "retry.in": "\(policy.createRetryInterval)",
            ])
            return update
        }
        createRetryAt[matchId] = nil
        let channel = MatchChannel(
            matchId: matchId, channelId: channelId, activityId: builder.makeActivityId(now: moment), current: update,
            now: moment, policy: activityPolicy)
        // Saved before anything uses it: a channel that exists at APNs is never unknown to the store.
        do {
            try await store.saveChannel(MatchChannelRecord(channel: channel, updatedAt: moment))
        } catch {
            logger.error("broadcast channel created but not saved; deleting it", metadata: [
                "match": "\(matchId)", "channel": "\(channelId)", "error": "\(error)",
            ])
            try? await client.deleteChannel(channelId)
            createRetryAt[matchId] = moment.addingTimeInterval(policy.createRetryInterval.seconds)
            return update
        }
        channels[matchId] = channel
        count("created")
        gauge()
        logger.info("broadcast channel opened", metadata: ["match": "\(matchId)", "channel": "\(channelId)", "followers": "\(followers)"])
        update.channelId = channelId
        return update
    }

    /// The match changed: its channel's broadcast, if any (an update, or the end, after which the
    /// channel is deleted once `deleteDelay` has passed and the end has been sent).
    public func matchChanged(_ update: MatchUpdate, matchId: String) -> [Delivery] {
        guard var channel = channels[matchId] else { return [] }
        let intents = channel.matchChanged(update, now: now(), policy: activityPolicy, channels: policy)
        return apply(intents, to: &channel)
    }

    /// The matches whose channel is open (a tick looks at each of them, with the match's other work).
    public func openMatchIds() -> [String] {
        channels.compactMap { $0.value.phase == .open ? $0.key : nil }
    }

    /// Time passed: the coalesced broadcast and stale-date refresh of the match's channel, if it is open. `fresh`:
    /// whether the match's feed answered lately. Returns the deliveries and when the channel next has something to do.
    public func tick(matchId: String, fresh isFresh: Bool) -> (deliveries: [Delivery], next: Date?) {
        guard var channel = channels[matchId], channel.phase == .open else { return ([], nil) }
        let moment = now()
        var deliveries: [Delivery] = []
        if let due = channel.nextDeadline(policy: activityPolicy, feedIsFresh: isFresh), due <= moment {
            deliveries = apply(channel.tick(now: moment, policy: activityPolicy, feedIsFresh: isFresh, channels: policy), to: &channel)
        }
        guard let due = channels[matchId]?.nextDeadline(policy: activityPolicy, feedIsFresh: isFresh), due > moment else {
            return (deliveries, nil)
        }
        return (deliveries, due)
    }

    /// The operation on the match put its deliveries in the outbox: its channel is saved now (with any other changed
    /// channel that waits for no operation). A save that fails is tried again at the next commit.
    public func commit(matchId: String) async {
        awaitingOutbox.remove(matchId)
        await saveDirty()
    }

    /// The operation on the match failed before its broadcasts were put in the outbox: the match's channel, if it made
    /// one, is read back from the store, so its next look broadcasts again what never went out. (Operations on other
    /// matches run meanwhile; their channels are theirs to commit or roll back.)
    public func rollBack(matchId: String) async {
        guard awaitingOutbox.contains(matchId) else { return }
        do {
            try await restore(matchId: matchId)
        } catch {
            // Kept as it is, still waiting for a commit: never saved as having broadcast.
            logger.error("broadcast channel not read back", metadata: ["match": "\(matchId)", "error": "\(error)"])
        }
    }

    /// Saves the changed channels, but not one whose broadcast is not in the outbox yet (`run`'s periodic save, and
    /// every `commit`). One runs at a time: a call while one runs has it look again before it ends, so two never
    /// write one channel out of order. Each channel is looked at just before its own write, not before the writes
    /// ahead of it: operations on other matches broadcast meanwhile.
    func saveDirty() async {
        guard !saving else {
            saveAgain = true
            return
        }
        saving = true
        defer { saving = false }
        repeat {
            saveAgain = false
            for matchId in dirty.sorted() {
                guard dirty.contains(matchId), !awaitingOutbox.contains(matchId) else { continue }
                guard let channel = channels[matchId] else {
                    dirty.remove(matchId)
                    continue
                }
                do {
                    try await store.saveChannel(MatchChannelRecord(channel: channel, updatedAt: now()))
                    // Changed again while it was written: still dirty, written at the next look.
                    if channels[matchId] == channel { dirty.remove(matchId) }
                } catch {
                    logger.error("broadcast channel not saved; trying again later", metadata: ["match": "\(matchId)", "error": "\(error)"])
                }
            }
        } while saveAgain
    }

    // MARK: Deleting

    /// The relay the lifecycle hands the broadcasts to (`Broker.useBroadcastChannels`): a channel is deleted only once
    /// its end has left it. The relay holds everything unsent that the store's outbox holds (it reads the outbox at
    /// a restart, and a match taken over from another replica hands it what that one left), and a store without an
    /// outbox (`memory`) has nothing else.
    public func watch(_ relay: DeliveryRelay) {
        self.relay = relay
    }

    /// Deletes the channels whose time has come, until shutdown.
    public func run() async throws {
        while !Task.isShuttingDownGracefully && !Task.isCancelled {
            await saveDirty()
            let next = await deleteDue()
            let wait = next.map { max(.milliseconds(1), min(maxInterval, .milliseconds(Int64($0.timeIntervalSince(now()) * 1000)))) }
                ?? maxInterval
            let clock = self.clock
            guard (try? await cancelWhenGracefulShutdown({ try await clock.sleep(for: wait) })) != nil else { break }
        }
        await saveDirty()
        client.shutdown()
    }

    /// Tries every delete that is due; returns when the next one is.
    @discardableResult
    public func deleteDue() async -> Date? {
        for matchId in channels.keys.sorted() {
            guard let channel = channels[matchId], channel.deleteIsDue(now: now()) else { continue }
            await delete(channel)
        }
        return channels.values.compactMap { $0.phase == .closing ? $0.deleteAt : nil }.min()
    }

    private func delete(_ channel: MatchChannel) async {
        let matchId = channel.matchId
        var channel = channel
        if await isUnsent(PushTarget(kind: .channel, value: channel.channelId), of: matchId) {
            channel.postponeDelete(until: now().addingTimeInterval(max(1, policy.deleteDelay.seconds)))
            channels[matchId] = channel
            dirty.insert(matchId)
            return
        }
        do {
            try await client.deleteChannel(channel.channelId)
        } catch {
            channel.deleteFailed(now: now(), channels: policy)
            channels[matchId] = channel
            dirty.insert(matchId)
            count("delete_failed")
            logger.warning("broadcast channel not deleted; trying again", metadata: [
                "match": "\(matchId)", "channel": "\(channel.channelId)", "attempt": "\(channel.deleteAttempts)",
                "retry.at": "\(channel.deleteAt.map { "\($0)" } ?? "-")", "error": "\(error)",
            ])
            return
        }
        do {
            try await store.deleteChannel(matchId: matchId)
        } catch {
            // Deleted at APNs but still in the store: the next look deletes again (a 404 counts as done).
            logger.error("broadcast channel deleted but still stored", metadata: ["match": "\(matchId)", "error": "\(error)"])
            return
        }
        channels[matchId] = nil
        dirty.remove(matchId)
        count("deleted")
        gauge()
        logger.info("broadcast channel deleted", metadata: ["match": "\(matchId)", "channel": "\(channel.channelId)"])
    }

    /// Whether the match's end (or any broadcast) to `target` has yet to go out: still being saved by the lifecycle
    /// (which hands it to the relay before its `commit`), or held by the relay.
    private func isUnsent(_ target: PushTarget, of matchId: String) async -> Bool {
        if awaitingOutbox.contains(matchId) { return true }
        return await relay?.holds(target) ?? false
    }

    // MARK: Internals

    private func apply(_ intents: [PushIntent], to channel: inout MatchChannel) -> [Delivery] {
        let matchId = channel.matchId
        var deliveries: [Delivery] = []
        for intent in intents {
            do {
                if let delivery = try builder.build(
                    intent, matchId: matchId, activityId: channel.activity.activityId, pushToStartToken: nil, now: now()) {
                    deliveries.append(delivery)
                }
            } catch {
                logger.error("broadcast payload too large", metadata: ["match": "\(matchId)", "error": "\(error)"])
            }
        }
        let wasOpen = channels[matchId]?.phase == .open
        if channels[matchId] != channel { dirty.insert(matchId) }
        if !deliveries.isEmpty { awaitingOutbox.insert(matchId) }
        channels[matchId] = channel
        if wasOpen, channel.phase == .closing {
            logger.info("broadcast channel closing", metadata: ["match": "\(matchId)", "channel": "\(channel.channelId)"])
        }
        return deliveries
    }

    private func count(_ event: String) {
        Counter(label: "matchcast_broadcast_channels_total", dimensions: [("event", event)], factory: metricsFactory).increment()
    }

    private func gauge() {
        Gauge(label: "matchcast_broadcast_channels", factory: metricsFactory).record(Double(channels.count))
    }
}
