import CoreMetrics
import Foundation
import Logging
import MatchcastCore
import MatchcastDelivery
import MatchcastStore
import ServiceLifecycle

/// Takes deliveries from the store's outbox to the sinks, in the order they were queued, and forgets each one once
/// every sink has it: the "nothing lost" half of delivery.
///
/// `LifecycleManager` saves an operation's activities and its deliveries in one transaction, then `submit`s them
/// here. What a crash interrupts is still queued in the store and goes out after the restart (`recover`) with the
/// same ids. While a sink is down, queued updates of one activity collapse to the newest (the store does the same),
/// so a long outage costs one queued update per activity, and every `end`.
///
/// A `start` is claimed (removed from the store) before it is sent: after a crash it may be missing, never doubled,
/// because two Live Activities on one device are worse than a late one. Everything else is at least once.
///
/// - `inline`: `submit` delivers before it returns (replay, `follow`, tests: deterministic).
/// - `background`: `submit` only queues; `run()` (a `Service`) delivers, retrying failed sinks with backoff, so a
///   slow or absent receiver never holds up the lifecycle.
public actor DeliveryRelay {
    public enum Mode: Sendable { case inline, background }

    /// A batch handed to the sinks, and what the sinks that failed still have to take of it (a sink that names what
    /// it did not take is handed that alone again: `PartialDeliveryFailure`).
    private struct InFlight {
        var batch: [Delivery]
        var remaining: [DeliveryDispatcher.Work]

        init(batch: [Delivery], sinks: [Int]) {
            self.batch = batch
            remaining = sinks.map { ($0, batch) }
        }
    }

    private let store: any MatchcastStore
    let dispatcher: DeliveryDispatcher
    private let mode: Mode
    private let metrics: BrokerMetrics
    /// `matchcast_high_priority_pushes_total`, per target kind, counted as deliveries are submitted.
    private let highPriority: [PushTarget.Kind: Counter]
    private let clock: any Clock<Duration>
    private let backoff: RetryPolicy
    private let maxBatch: Int
    /// The most starts one queued batch holds. Starts leave the outbox when their batch is taken, before it is sent
    /// (at most once): a crash while the batch is being sent loses the starts not yet sent, so a batch holds no more
    /// of them than one request of a sink carries (the webhook's default batch), not a whole kick-off. (`.inline`'s
    /// fast path hands a fan-out chunk straight to the sinks, at most one chunk's starts; only `matchcast replay`,
    /// whose store dies with it anyway, and the benchmarks deliver inline.)
    private let maxStarts: Int
    private let drainTimeout: Duration
    private let logger: Logger
    private let wake: AsyncStream<Void>.Continuation
    private let wakes: AsyncStream<Void>

    /// Deliveries not yet taken, from `head` on.
    private var queue: [Delivery] = []
    private var head = 0
    /// Activity id → the id of its queued update; ids in `superseded` are skipped when taken.
    private var queuedUpdate: [String: String] = [:]
    private var superseded: Set<String> = []
    private var inFlight: InFlight?
    private var pumping = false
    /// Inline submits, one at a time.
    private let inlineTurns = AsyncSerialGate()

    public init(
        store: any MatchcastStore, dispatcher: DeliveryDispatcher, mode: Mode, metrics: BrokerMetrics,
        clock: any Clock<Duration> = ContinuousClock(),
        backoff: RetryPolicy = RetryPolicy(initialBackoff: .seconds(1), maxBackoff: .seconds(30)),
        maxBatch: Int = 50_000, maxStarts: Int = DeliveryRelay.defaultMaxStarts, drainTimeout: Duration = .seconds(10),
        logger: Logger
    ) {
        self.store = store
        self.dispatcher = dispatcher
        self.mode = mode
        self.metrics = metrics
        highPriority = Dictionary(uniqueKeysWithValues: PushTarget.Kind.allCases.map {
            ($0, metrics.highPriorityPushes(target: $0))
        })
        self.clock = clock
        self.backoff = backoff
        self.maxBatch = max(1, maxBatch)
        self.maxStarts = max(1, maxStarts)
        self.drainTimeout = drainTimeout
        self.logger = logger
        (wakes, wake) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
    }

    /// Deliveries waiting here (not counting a batch being sent).
    public var depth: Int { queue.count - head - superseded.count }

    /// Deliveries submitted and not yet taken by every sink: queued, or in a batch a sink failed to take.
    public var undelivered: Int { depth + (inFlight?.batch.count ?? 0) }

    /// Whether a delivery to `target` was submitted and not yet taken by every sink (queued, or in a batch a sink
    /// failed to take): what a store without an outbox still has to send.
    public func holds(_ target: PushTarget) -> Bool {
        if queue[head...].contains(where: { $0.target == target }) { return true }
        return inFlight?.remaining.contains { $0.deliveries.contains { $0.target == target } } ?? false
    }

    /// Deliveries just saved to the outbox by the caller. Inline: sent before this returns, one submit after the
    /// other (operations on different matches submit side by side: without turns, one's pump could send another's
    /// batch before that one's starts are claimed, and that one return before its deliveries are sent).
    public func submit(_ deliveries: [Delivery]) async {
        guard !deliveries.isEmpty else { return }
        countHighPriority(deliveries)
        guard mode == .inline else {
            enqueue(deliveries)
            wake.yield()
            return
        }
        await inlineTurns.enter()
        defer { inlineTurns.leave() }
        if inFlight == nil, head == queue.count {
            // Nothing waiting ahead of them: straight to the sinks, no queue bookkeeping (the fan-out hot path).
            inFlight = InFlight(batch: deliveries, sinks: dispatcher.allSinks)
            await claimStarts(deliveries)
            _ = await pump()
            return
        }
        enqueue(deliveries)
        _ = await pump()
    }

    /// Counts the priority-10 deliveries among new ones by target kind (`matchcast_high_priority_pushes_total`).
    private func countHighPriority(_ deliveries: [Delivery]) {
        var (updates, channels, starts, others) = (0, 0, 0, [PushTarget.Kind: Int]())
        for index in deliveries.indices where deliveries[index].priority == 10 {
            switch deliveries[index].target.kind {
            case .updateToken: updates += 1
            case .channel: channels += 1
            case .pushToStartToken: starts += 1
            case let kind: others[kind, default: 0] += 1
            }
        }
        for (kind, count) in [(PushTarget.Kind.updateToken, updates), (.channel, channels), (.pushToStartToken, starts)] where count > 0 {
            highPriority[kind]?.increment(by: count)
        }
        for (kind, count) in others { highPriority[kind]?.increment(by: count) }
    }

    /// After a restart, before anything new is submitted: what the store still has queued, oldest first.
    public func recover() async throws(ServiceError) {
        let queued: [Delivery]
        do {
            queued = try await store.queuedDeliveries(limit: Int.max)
        } catch {
            throw ServiceError(.unavailable, "reading the outbox: \(error)")
        }
        guard !queued.isEmpty else { return }
        logger.info("outbox recovered", metadata: ["deliveries": "\(queued.count)"])
        enqueue(queued)
        if mode == .background { wake.yield() }
    }

    /// Sends until nothing is waiting (true) or a sink fails (false: the failed batch is kept for those sinks).
    public func pump() async -> Bool {
        guard !pumping else { return true }  // the running pump takes whatever arrives meanwhile
        pumping = true
        defer {
            pumping = false
            metrics.outboxDepth(undelivered)
        }
        while true {
            if inFlight == nil {
                let batch = take()
                guard !batch.isEmpty else { return true }
                inFlight = InFlight(batch: batch, sinks: dispatcher.allSinks)
                await claimStarts(batch)
            }
            guard let current = inFlight else { return true }
            let failed = await dispatcher.dispatch(current.remaining)
            guard failed.isEmpty else {
                inFlight?.remaining = failed
                return false
            }
            inFlight = nil
            await forget(current.batch, starts: false)
        }
    }

    // MARK: Queue

    private func enqueue(_ deliveries: [Delivery]) {
        queue.reserveRoom(for: deliveries.count)
        for delivery in deliveries {
            if delivery.event == .update {
                if let older = queuedUpdate.updateValue(delivery.id, forKey: delivery.activityId) {
                    superseded.insert(older)
                }
            }
            queue.append(delivery)
        }
    }

    /// The default of `maxStarts`.
    public static let defaultMaxStarts = 500

    /// The next batch, skipping superseded updates, with at most `maxStarts` starts; compacts the queue once it is
    /// mostly taken.
    private func take() -> [Delivery] {
        var batch: [Delivery] = []
        var starts = 0
        while head < queue.count, batch.count < maxBatch {
            let delivery = queue[head]
            if delivery.event == .start {
                guard starts < maxStarts else { break }
                starts += 1
            }
            head += 1
            if superseded.remove(delivery.id) != nil { continue }
            if delivery.event == .update, queuedUpdate[delivery.activityId] == delivery.id {
                queuedUpdate[delivery.activityId] = nil
            }
            batch.append(delivery)
        }
        if head == queue.count {
            queue.removeAll(keepingCapacity: queue.count < 1 << 16)
            head = 0
        } else if head > queue.count / 2 {
            queue.removeFirst(head)
            head = 0
        }
        return batch
    }

    // MARK: Store

    /// Starts leave the outbox before they are sent (at most once).
    private func claimStarts(_ batch: [Delivery]) async {
        await forget(batch, starts: true)
    }

    /// The ids of the batch's starts (or of everything else), each delivery read in place: a fan-out's batch
    /// is 100,000 long, and copying each delivery out to look at it costs more than sending it.
    private static func ids(in batch: [Delivery], starts: Bool) -> [String] {
        var ids: [String] = []
        ids.reserveCapacity(starts ? 0 : batch.count)
        for index in batch.indices where (batch[index].event == .start) == starts {
            ids.append(batch[index].id)
        }
        return ids
    }

    /// Removes the batch's starts (or everything else) from the store's outbox, when it keeps one.
    private func forget(_ batch: [Delivery], starts: Bool) async {
        guard store.keepsOutbox else { return }
        let ids = Self.ids(in: batch, starts: starts)
        guard !ids.isEmpty else { return }
        do {
            try await store.removeQueuedDeliveries(ids: ids)
        } catch {
            // They stay queued: sent again after a restart, with the same ids. Never lost.
            logger.error("outbox: could not forget sent deliveries", metadata: ["count": "\(ids.count)", "error": "\(error)"])
        }
    }

    // MARK: Background

    /// Delivers what is submitted until graceful shutdown, then tries for `drainTimeout` to send what is left;
    /// anything still unsent stays in the store for the next start.
    public func run() async throws {
        wake.yield()
        var failures = 0
        wakeLoop: for await _ in wakes.cancelOnGracefulShutdown() {
            while await !pump() {
                failures += 1
                let delay = backoff.backoff(afterAttempt: failures, random: Double.random(in: 0..<1))
                logger.warning("outbox: a sink failed, retrying", metadata: [
                    "waiting": "\(undelivered)", "retryIn": "\(delay)",
                ])
                guard (try? await cancelWhenGracefulShutdown({ try await self.clock.sleep(for: delay) })) != nil else {
                    break wakeLoop
                }
            }
            failures = 0
        }
        await drain()
    }

    private func drain() async {
        let pending = undelivered
        guard pending > 0 else { return }
        logger.info("outbox: draining before exit", metadata: ["deliveries": "\(pending)"])
        let timeout = drainTimeout
        let clock = clock
        await withTaskGroup(of: Void.self) { group in
            group.addTask { _ = await self.pump() }
            group.addTask { try? await clock.sleep(for: timeout) }
            await group.next()
            group.cancelAll()
        }
        await requeueClaimedStarts()
    }

    /// Starts already claimed but not sent to every sink when the process stops go back to the store: those some sink
    /// still has to take (one a sink said it sent is not sent again).
    private func requeueClaimedStarts() async {
        guard let current = inFlight else { return }
        var seen = Set<String>()
        let starts = current.remaining.flatMap(\.deliveries).filter { $0.event == .start && seen.insert($0.id).inserted }
        guard !starts.isEmpty else { return }
        do {
            try await store.saveActivities([], enqueue: starts)
        } catch {
            logger.error("outbox: could not keep unsent starts", metadata: ["count": "\(starts.count)", "error": "\(error)"])
        }
    }
}

extension DeliveryRelay: Service {}
