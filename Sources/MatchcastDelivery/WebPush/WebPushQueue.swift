import Foundation
import Logging
import MatchcastCore

/// The deliveries handed to the Web Push sink and not yet settled, one lane per match: a match's pushes go one
/// after another in the order they came; pushes of different matches go at once, up to `maxConcurrentRequests`.
///
/// Latest state wins: an `update` still waiting in its lane is replaced by the next `update` or `end` of its match
/// (settled as superseded), and an update waiting to be retried gives way to whatever of its match came after it.
/// A `start` and an `end` are never replaced, so at most a start, an update and an end wait per match.
actor WebPushQueue {
    private struct Lane {
        var waiting: [WebPushItem] = []
        /// A send of this match is running.
        var busy = false
        /// In `ready`, waiting for a free send.
        var scheduled = false
    }

    private let sender: WebPushSender
    private let maxConcurrent: Int
    private var lanes: [String: Lane] = [:]
    /// Matches with a waiting push and no running send, first come first served.
    private var ready: [String] = []
    private var running = 0
    /// Handed over, not yet settled.
    private var pending = 0
    private var idleWaiters: [CheckedContinuation<Void, Never>] = []
    private var attributes: RememberedAttributes
    private var nextTaskId = 0

    init(sender: WebPushSender) {
        self.sender = sender
        maxConcurrent = sender.configuration.maxConcurrentRequests
        attributes = RememberedAttributes(capacity: sender.configuration.rememberedMatches)
    }

    /// Queues `batch` in order and starts what can start; returns once every delivery is queued or settled.
    func enqueue(_ batch: [Delivery]) async {
        var superseded = 0
        var unsendable: [WebPushItem] = []
        for delivery in batch {
            pending += 1
            let aps = delivery.payload.aps
            if let carried = aps.attributes { attributes.remember(carried, for: delivery.matchId) }
            let item = WebPushItem(
                delivery: delivery, surface: LiveSurface(delivery: delivery, attributes: attributes[delivery.matchId]))
            if aps.event == .end { attributes.forget(delivery.matchId) }
            if sender.state.gone != nil || sender.state.closed {
                unsendable.append(item)
                continue
            }
            var lane = lanes[delivery.matchId] ?? Lane()
            if item.event != .start, let last = lane.waiting.last, last.event == .update {
                lane.waiting[lane.waiting.count - 1] = item
                superseded += 1
            } else {
                lane.waiting.append(item)
            }
            if !lane.busy, !lane.scheduled {
                lane.scheduled = true
                ready.append(delivery.matchId)
            }
            lanes[delivery.matchId] = lane
        }
        if superseded > 0 {
            sender.settle(.superseded, count: superseded)
            settled(superseded)
        }
        pump()
        await deadLetter(unsendable)
    }

    /// Returns once everything handed over is settled.
    func idle() async {
        guard pending > 0 else { return }
        await withCheckedContinuation { idleWaiters.append($0) }
    }

    /// How many matches' start attributes are kept (tests).
    var rememberedMatches: Int { attributes.count }

    /// Whether a push of `matchId` waits behind the one being sent.
    private func hasWaiting(_ matchId: String) -> Bool {
        lanes[matchId]?.waiting.isEmpty == false
    }

    /// Starts sends while there are free ones and matches ready.
    private func pump() {
        while running < maxConcurrent, !ready.isEmpty {
            let matchId = ready.removeFirst()
            guard var lane = lanes[matchId], !lane.waiting.isEmpty else { continue }
            let item = lane.waiting.removeFirst()
            lane.scheduled = false
            lane.busy = true
            lanes[matchId] = lane
            running += 1
            let id = nextTaskId
            nextTaskId += 1
            let task = Task { await self.run(item, taskId: id) }
            sender.state.locked { $0.tasks[id] = task }
        }
    }

    private nonisolated func run(_ item: WebPushItem, taskId: Int) async {
        let matchId = item.matchId
        let result = await sender.send(item) { await self.hasWaiting(matchId) }
        await finished(item, result: result, taskId: taskId)
    }

    private func finished(_ item: WebPushItem, result: WebPushSender.Result, taskId: Int) async {
        sender.state.locked { $0.tasks[taskId] = nil }
        running -= 1
        var orphans: [WebPushItem] = []
        if case .gone(let gone) = result {
            let first = sender.state.locked { values in
                defer { if values.gone == nil { values.gone = gone } }
                return values.gone == nil
            }
            if first {
                sender.logger.error("the push service says the subscription is gone; nothing more is sent to it",
                                    metadata: ["webpush.status": "\(gone.status)"])
            }
        }
        if sender.state.gone != nil || sender.state.closed {
            // Nothing waiting can be sent: every lane's pushes become dead letters now, not one by one.
            for (_, lane) in lanes { orphans += lane.waiting }
            lanes = lanes.filter { $0.value.busy && $0.key != item.matchId }.mapValues { lane in
                var lane = lane
                lane.waiting = []
                lane.scheduled = false
                return lane
            }
            ready = []
        } else if var lane = lanes[item.matchId] {
            lane.busy = false
            if lane.waiting.isEmpty {
                lanes[item.matchId] = nil
            } else {
                lane.scheduled = true
                lanes[item.matchId] = lane
                ready.append(item.matchId)
            }
        }
        pump()
        await deadLetter(orphans)
        settled(1)
    }

    /// Dead-letters pushes that cannot be sent (the subscription is gone, or the sink shut down), then counts them settled.
    private func deadLetter(_ items: [WebPushItem]) async {
        guard !items.isEmpty else { return }
        let body = sender.state.gone.map(WebPushSender.goneBody) ?? WebPushSender.shutDownBody
        let status = sender.state.gone?.status ?? 0
        for item in items {
            await sender.deadLetter(item, status: status, body: body, logger: sender.logger)
        }
        settled(items.count)
    }

    private func settled(_ count: Int) {
        pending -= count
        guard pending == 0 else { return }
        let waiters = idleWaiters
        idleWaiters = []
        for waiter in waiters { waiter.resume() }
    }
}
