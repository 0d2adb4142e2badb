import CoreMetrics
import Foundation
import Synchronization

/// Whether each feed answered lately, for `/readyz`: reachable until a poll fails, and again once one succeeds.
public final class FeedHealth: Sendable {
    private struct Answers {
        var lastSuccess: Date?
        var lastFailure: Date?

        /// No poll failed since the last success (or nothing was polled yet).
        var isReachable: Bool {
            guard let lastFailure else { return true }
            return (lastSuccess ?? .distantPast) > lastFailure
        }
    }

    /// The feeds' names, in the order of the router's members.
    public let names: [String]
    private let state: Mutex<[Answers]>
    /// `matchcast_feed_reachable{feed}`, one per feed, when metrics are kept.
    private let gauges: [Gauge]?

    public init(names: [String], metrics: BrokerMetrics? = nil) {
        self.names = names
        state = Mutex(Array(repeating: Answers(), count: names.count))
        gauges = metrics.map { metrics in names.map { metrics.feedReachable(feed: $0) } }
        for gauge in gauges ?? [] { gauge.record(1) }
    }

    /// A poll of feed `index` succeeded (nil: not known which feed; nothing recorded).
    func succeeded(_ index: Int?, at date: Date) {
        guard let index else { return }
        record(index) { $0.lastSuccess = date }
    }

    func failed(_ index: Int?, at date: Date) {
        guard let index else { return }
        record(index) { $0.lastFailure = date }
    }

    /// Changes feed `index`'s answers; its gauge follows when its reachability changed.
    private func record(_ index: Int, _ change: (inout Answers) -> Void) {
        state.withLock { answers in
            let was = answers[index].isReachable
            change(&answers[index])
            let now = answers[index].isReachable
            if now != was { gauges?[index].record(now ? 1 : 0) }
        }
    }

    /// Each feed by name: whether it is reachable.
    public var reachability: [String: Bool] {
        state.withLock { answers in
            Dictionary(zip(names, answers.map(\.isReachable)), uniquingKeysWith: { $0 && $1 })
        }
    }
}
