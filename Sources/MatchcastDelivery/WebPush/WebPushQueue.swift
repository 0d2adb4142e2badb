import Foundation
import Logging
import MatchcastCore

/// The deliveries handed to the Web Push sink and not yet settled, one lane per match and subscription: a match's
/// pushes to a subscription go one after another in the order they came; pushes of different lanes go at once, up to
/// `maxConcurrentRequests`.
///
/// Routed by target (`WebPushSinkConfiguration.Recipient.deliveryTargets`), a subscription the push service calls gone
/// is reported (`WebPushSender.onGone`) and what waits for it, or comes for it later, is dead-lettered; the other
/// subscriptions carry on.
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
    /// Lanes with a waiting push and no running send, first come first served.
    private var ready: [String] = []
    /// The first of `ready` not yet taken: taken from the front without moving the rest (a kick-off to 20,000 browsers
    /// readies 20,000 lanes at once).
    private var readyHead = 0
    private var running = 0
    /// Handed over, not yet settled.
    private var pending = 0
    private var idleWaiters: [CheckedContinuation<Void, Never>] = []
    private var attributes: RememberedAttributes
    private var nextTaskId = 0
    /// Routed: subscriptions read from delivery targets (reading checks the key), by target value.
    private var subscriptions: [String: WebPushMessage.Subscription] = [:]
    /// Routed: subscriptions the push service called gone, by target value.
    private var gone: [String: WebPushSubscriptionGone] = [:]
    /// Past this many, the remembered subscriptions and gone ones are forgotten and read again as they come.
    private static let rememberedSubscriptions = 100_000

    init(sender: WebPushSender) {
        self.sender = sender
        maxConcurrent = sender.configuration.maxConcurrentRequests
        attributes = RememberedAttributes(capacity: sender.configuration.rememberedMatches)
    }

    /// Queues `batch` in order and starts what can start; returns once every delivery is queued or settled.
    func enqueue(_ batch: [Delivery]) async {
        var superseded = 0
        var unsendable: [Unsendable] = []
        for delivery in batch {
            let subscription: WebPushMessage.Subscription
            var address: String?
            switch sender.configuration.recipient {
            case .subscription(let configured):
                subscription = configured
            case .deliveryTargets:
                guard delivery.target.kind == .webPushSubscription else { continue }  // another sink's
                address = delivery.target.value
                switch self.subscription(delivery.target.value) {
                case .success(let read): subscription = read
                case .failure(let error):
                    pending += 1
                    unsendable.append(Unsendable(delivery: delivery, status: 0, body: "not sent: \(error.message)"))
                    continue
                }
            }
            pending += 1
            let aps = delivery.payload.aps
            if let carried = aps.attributes { attributes.remember(carried, for: delivery.matchId) }
            let item = WebPushItem(
                delivery: delivery,
                surface: LiveSurface(
                    delivery: delivery, attributes: attributes[delivery.matchId],
                    deepLink: sender.configuration.deepLink?.link(matchId: delivery.matchId)),
                subscription: subscription, address: address)
            if aps.event == .end { attributes.forget(delivery.matchId) }
            if let reason = unsendableReason(item) {
                unsendable.append(Unsendable(delivery: delivery, status: reason.status, body: reason.body))
                continue
            }
            var lane = lanes[item.lane] ?? Lane()
            if item.event != .start, let last = lane.waiting.last, last.event == .update {
                lane.waiting[lane.waiting.count - 1] = item
                superseded += 1
            } else {
                lane.waiting.append(item)
            }
            if !lane.busy, !lane.scheduled {
                lane.scheduled = true
                ready.append(item.lane)
            }
            lanes[item.lane] = lane
        }
        if superseded > 0 {
            sender.settle(.superseded, count: superseded)
            settled(superseded)
        }
        pump()
        await deadLetter(unsendable)
    }

    /// A delivery that will not be sent, and why.
    private struct Unsendable {
        var delivery: Delivery
        var status: Int
        var body: String
    }

    /// Why `item` cannot be sent now, if it cannot: the sink shut down, or its subscription is gone.
    private func unsendableReason(_ item: WebPushItem) -> (status: Int, body: String)? {
        if let gone = sender.state.gone ?? item.address.flatMap({ gone[$0] }) {
            return (gone.status, WebPushSender.goneBody(gone))
        }
        return sender.state.closed ? (0, WebPushSender.shutDownBody) : nil
    }

    /// The subscription a delivery's target carries, read once.
    private func subscription(_ value: String) -> Result<WebPushMessage.Subscription, WebPushSetupError> {
        if let known = subscriptions[value] { return .success(known) }
        let read = Result { () throws(WebPushSetupError) in
            try WebPushMessage.Subscription(json: Data(value.utf8), source: "the delivery's subscription", now: sender.now())
        }
        if case .success(let subscription) = read {
            if subscriptions.count >= Self.rememberedSubscriptions { subscriptions.removeAll() }
            subscriptions[value] = subscription
        }
        return read
    }

    /// Returns once everything handed over is settled.
    func idle() async {
        guard pending > 0 else { return }
        await withCheckedContinuation { idleWaiters.append($0) }
    }

    /// How many matches' start attributes are kept (tests).
    var rememberedMatches: Int { attributes.count }

    /// Whether a push waits in `lane` behind the one being sent.
    private func hasWaiting(_ lane: String) -> Bool {
        lanes[lane]?.waiting.isEmpty == false
    }

    /// Starts sends while there are free ones and lanes ready.
    private func pump() {
        while running < maxConcurrent, readyHead < ready.count {
            let key = ready[readyHead]
            readyHead += 1
            if readyHead == ready.count {
                ready.removeAll(keepingCapacity: true)
                readyHead = 0
            } else if readyHead > 1024, readyHead > ready.count / 2 {
                ready.removeFirst(readyHead)
                readyHead = 0
            }
            guard var lane = lanes[key], !lane.waiting.isEmpty else { continue }
            let item = lane.waiting.removeFirst()
            lane.scheduled = false
            lane.busy = true
            lanes[key] = lane
            running += 1
            let id = nextTaskId
            nextTaskId += 1
            let task = Task { await self.run(item, taskId: id) }
            sender.state.locked { $0.tasks[id] = task }
        }
    }

    private nonisolated func run(_ item: WebPushItem, taskId: Int) async {
        let lane = item.lane
        let result = await sender.send(item) { await self.hasWaiting(lane) }
        await finished(item, result: result, taskId: taskId)
    }

    private func finished(_ item: WebPushItem, result: WebPushSender.Result, taskId: Int) async {
        sender.state.locked { $0.tasks[taskId] = nil }
        running -= 1
        var orphans: [WebPushItem] = []
        if case .gone(let gone) = result, let address = item.address {
            // Routed: this subscription alone is gone. What waits for it is dead-lettered; the broker is told.
            if self.gone[address] == nil {
                if self.gone.count >= Self.rememberedSubscriptions { self.gone.removeAll() }
                self.gone[address] = gone
                sender.logger.notice("the push service says a subscription is gone; nothing more is sent to it", metadata: [
                    "webpush.status": "\(gone.status)", "webpush.endpoint": "\(gone.origin)",
                ])
                await sender.onGone(address, "webpush:HTTP \(gone.status)")
            }
            for (key, lane) in lanes where lane.waiting.first?.address == address {
                orphans += lane.waiting
                // A lane still sending keeps its place (its send's end clears it); an idle one goes.
                if lane.busy { lanes[key]?.waiting = [] } else { lanes[key] = nil }
            }
        } else if case .gone(let gone) = result {
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
            lanes = lanes.filter { $0.value.busy && $0.key != item.lane }.mapValues { lane in
                var lane = lane
                lane.waiting = []
                lane.scheduled = false
                return lane
            }
            ready = []
            readyHead = 0
        } else if var lane = lanes[item.lane] {
            lane.busy = false
            if lane.waiting.isEmpty {
                lanes[item.lane] = nil
            } else {
                lane.scheduled = true
                lanes[item.lane] = lane
                ready.append(item.lane)
            }
        }
        pump()
        await deadLetter(orphans.map { orphan in
            let reason = unsendableReason(orphan) ?? (0, WebPushSender.shutDownBody)
            return Unsendable(delivery: orphan.delivery, status: reason.status, body: reason.body)
        })
        settled(1)
    }

    /// Dead-letters pushes that cannot be sent (the subscription is gone or unreadable, or the sink shut down), then
    /// counts them settled.
    private func deadLetter(_ items: [Unsendable]) async {
        guard !items.isEmpty else { return }
        for item in items {
            await sender.deadLetter(item.delivery, event: item.delivery.payload.aps.event, status: item.status, body: item.body,
                                    logger: sender.logger)
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
