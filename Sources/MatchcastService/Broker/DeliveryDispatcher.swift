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

    /// Delivers to all sinks concurrently; a failing sink is logged and counted, never stops the others.
    public func dispatch(_ deliveries: [Delivery]) async {
        guard !deliveries.isEmpty else { return }
        await withTaskGroup(of: Void.self) { group in
            for sink in sinks {
                group.addTask {
                    do {
                        try await sink.deliver(deliveries)
                        if !sink.countsDeliveries {
                            metrics.deliveries(sink: sink.name, outcome: "delivered", count: deliveries.count)
                        }
                    } catch {
                        if !sink.countsDeliveries {
                            metrics.deliveries(sink: sink.name, outcome: "failed", count: deliveries.count)
                        }
                        logger.error("delivery failed", metadata: [
                            "sink": "\(sink.name)", "count": "\(deliveries.count)", "error": "\(error)",
                        ])
                    }
                }
            }
        }
    }
}
