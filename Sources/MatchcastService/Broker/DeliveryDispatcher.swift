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
            if let answer = sink.lastAnswer(token: token) { return answer }
        }
        return nil
    }

    /// Delivers to the sinks at `positions` (all by default) concurrently; a failing sink is logged and counted,
    /// never stops the others. Returns the positions of the sinks that failed, in order.
    @discardableResult
    public func dispatch(_ deliveries: [Delivery], to positions: [Int]? = nil) async -> [Int] {
        let positions = positions ?? allSinks
        return await dispatch(positions.map { ($0, deliveries) }).map(\.position)
    }

    /// What a sink still has to take: its position, and the deliveries.
    public typealias Work = (position: Int, deliveries: [Delivery])

    /// Delivers each sink its own deliveries, concurrently; a failing sink is logged and counted, never stops the
    /// others. Returns, in position order, what each failed sink still has to take: what it said it did not take
    /// (`PartialDeliveryFailure`), else all it was given.
    public func dispatch(_ work: [Work]) async -> [Work] {
        let work = work.filter { !$0.deliveries.isEmpty }
        if work.count == 1 {
            return await deliver(work[0].deliveries, to: work[0].position).map { [(work[0].position, $0)] } ?? []
        }
        guard !work.isEmpty else { return [] }
        return await withTaskGroup(of: Work?.self) { group in
            for (position, deliveries) in work {
                group.addTask { await deliver(deliveries, to: position).map { (position, $0) } }
            }
            var failed: [Work] = []
            for await left in group { if let left { failed.append(left) } }
            return failed.sorted { $0.position < $1.position }
        }
    }

    /// Nil when the sink took everything; else what it still has to take.
    private func deliver(_ deliveries: [Delivery], to position: Int) async -> [Delivery]? {
        let sink = sinks[position]
        do {
            try await sink.deliver(deliveries)
            if !sink.countsDeliveries {
                metrics.deliveries(sink: sink.name, outcome: "delivered", count: deliveries.count)
            }
            return nil
        } catch {
            let left = Self.left(of: deliveries, after: error)
            if !sink.countsDeliveries {
                metrics.deliveries(sink: sink.name, outcome: "delivered", count: deliveries.count - left.count)
                metrics.deliveries(sink: sink.name, outcome: "failed", count: left.count)
            }
            logger.error("delivery failed", metadata: [
                "sink": "\(sink.name)", "count": "\(deliveries.count)", "left": "\(left.count)", "error": "\(error)",
            ])
            return left
        }
    }

    /// What of `deliveries` a sink that threw `error` did not take: those it names (`PartialDeliveryFailure`), kept in
    /// batch order and only if they are the batch's; all of them when it names none.
    static func left(of deliveries: [Delivery], after error: any Error) -> [Delivery] {
        guard let partial = error as? any PartialDeliveryFailure, !partial.undelivered.isEmpty else { return deliveries }
        let named = Set(partial.undelivered.map(\.id))
        let left = deliveries.filter { named.contains($0.id) }
        return left.isEmpty ? deliveries : left
    }
}
