import Foundation
import MatchcastCore
import Synchronization

/// What the sink's tasks share with its synchronous properties (`isHealthy`, `subscriptionGone`, `settled`):
/// behind one lock, never held across a suspension.
final class WebPushSinkState: Sendable {
    struct Values {
        var gone: WebPushSubscriptionGone?
        /// When the push service stopped answering (a connection failure, a timeout or a 5xx), until it answers again.
        var failingSince: Date?
        /// `shutdown()` was called: nothing more is sent.
        var closed = false
        var settled = WebPushSink.Settled()
        /// The running sends, to cancel on `shutdown()`.
        var tasks: [Int: Task<Void, Never>] = [:]
    }

    private let values = Mutex(Values())

    func locked<T>(_ body: (inout Values) -> T) -> T {
        values.withLock { body(&$0) }
    }

    var gone: WebPushSubscriptionGone? { locked { $0.gone } }
    var closed: Bool { locked { $0.closed } }

    /// The push service gave an answer: a 5xx means it is in trouble, any other that it is there.
    func answered(status: Int, at now: Date) {
        if status >= 500 { failing(at: now) } else { locked { $0.failingSince = nil } }
    }

    /// No answer (connection failure, timeout).
    func failing(at now: Date) {
        locked { if $0.failingSince == nil { $0.failingSince = now } }
    }
}

/// One delivery on its way: its surface is made when it is handed over, with the attributes known then.
struct WebPushItem: Sendable {
    let delivery: Delivery
    let surface: LiveSurface
    let subscription: WebPushMessage.Subscription
    /// Routed by target: the delivery's target value, how the broker knows the subscription; nil for the configured one.
    let address: String?

    var matchId: String { delivery.matchId }
    var event: ActivityEvent { surface.event }
    /// Its lane: pushes of one match to one subscription go one after another.
    var lane: String { address.map { $0 + "\u{0}" + matchId } ?? matchId }
}

/// The attributes of the matches' `start`s, for their updates (which do not carry them): at most `capacity`
/// matches, the least recently started forgotten first, and a match forgotten at its `end`.
struct RememberedAttributes {
    let capacity: Int
    private var byMatch: [String: ActivityAttributes] = [:]
    private var order: [String] = []

    init(capacity: Int) { self.capacity = max(1, capacity) }

    var count: Int { byMatch.count }

    subscript(matchId: String) -> ActivityAttributes? { byMatch[matchId] }

    mutating func remember(_ attributes: ActivityAttributes, for matchId: String) {
        if byMatch.updateValue(attributes, forKey: matchId) != nil, let index = order.firstIndex(of: matchId) {
            order.remove(at: index)
        }
        order.append(matchId)
        while order.count > capacity {
            byMatch[order.removeFirst()] = nil
        }
    }

    mutating func forget(_ matchId: String) {
        guard byMatch.removeValue(forKey: matchId) != nil, let index = order.firstIndex(of: matchId) else { return }
        order.remove(at: index)
    }
}
