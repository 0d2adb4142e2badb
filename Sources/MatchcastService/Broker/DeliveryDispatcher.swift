import Logging
import MatchcastCore
import MatchcastDelivery

/// Hands each batch of deliveries to every configured sink (`--sink` may be given more than once).
public struct DeliveryDispatcher: Sendable {
    public let sinks: [any DeliverySink]
    private let metrics: BrokerMetrics
    private let logger: Logger

    public init(sinks: [any DeliverySink], metrics: BrokerMetrics, logger: Logger) {
        self.sinks = sinks
        self.metrics = metrics
        self.logger = logger
    }

    /// The positions of every sink in `sinks`.
    public var allSinks: [Int] { Array(sinks.indices) }

    /// The last answer a sink's push service gave for `token` (`TokenAnswers`), from the first sink that keeps one.
    public func lastAnswer(token: String) -> TokenAnswers.Answer? {
        for sink in sinks {
            if let answer = sink.tokenAnswers?.last(token: token) { return answer }
        }
        return nil
    }

    /// Delivers to the sinks at `positions` (all by default) concurrently; a failing sink is logged and counted,
    /// never stops the others. Returns the positions of the sinks that failed, in order.
    @discardableResult
    public func dispatch(_ deliveries: [Delivery], to positions: [Int]? = nil) async -> [Int] {
        let positions = positions ?? allSinks
        guard !deliveries.isEmpty, !positions.isEmpty else { return [] }
        if positions.count == 1 {
            return await deliver(deliveries, to: positions[0]) ? [] : positions
        }
        return await withTaskGroup(of: (Int, Bool).self) { group in
            for position in positions {
                group.addTask { (position, await deliver(deliveries, to: position)) }
            }
            var failed: [Int] = []
            for await (position, ok) in group where !ok { failed.append(position) }
            return failed.sorted()
        }
    }

    private func deliver(_ deliveries: [Delivery], to position: Int) async -> Bool {
        let sink = sinks[position]
        do {
            try await sink.deliver(deliveries)
            if !sink.countsDeliveries {
                metrics.deliveries(sink: sink.name, outcome: "delivered", count: deliveries.count)
            }
            return true
        } catch {
            if !sink.countsDeliveries {
                metrics.deliveries(sink: sink.name, outcome: "failed", count: deliveries.count)
            }
            logger.error("delivery failed", metadata: [
                "sink": "\(sink.name)", "count": "\(deliveries.count)", "error": "\(error)",
            ])
            return false
        }
    }
}
