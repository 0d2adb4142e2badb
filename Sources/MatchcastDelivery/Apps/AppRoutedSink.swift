import CoreMetrics
import MatchcastCore

/// One push service (`apns`, `fcm`, `webpush`) for several apps: each delivery goes to the sink of the app its topic
/// names (`AppCatalog`; the topic is the app's bundle id, and every stored delivery carries it), so a push leaves with
/// its own app's credentials and never with another's. A delivery whose topic no app has (its app was taken out of
/// the configuration) is dead-lettered, not sent with someone else's key.
public struct AppRoutedSink: DeliverySink {
    /// One app's sink.
    public struct Route: Sendable {
        public let appId: String
        public let topic: String
        public let sink: any DeliverySink

        public init(appId: String, topic: String, sink: any DeliverySink) {
            self.appId = appId
            self.topic = topic
            self.sink = sink
        }
    }

    /// What some apps' sinks did not take; the others took theirs.
    public struct Failure: PartialDeliveryFailure, CustomStringConvertible {
        public let undelivered: [Delivery]
        /// Per app that failed, its sink's error.
        public let errors: [(appId: String, error: any Error)]

        public var description: String {
            errors.map { "app \($0.appId): \($0.error)" }.joined(separator: "; ")
        }
    }

    public let name: String
    public let routes: [Route]
    private let byTopic: [String: Route]
    private let deadLetters: any DeadLetterRecorder
    private let metricsFactory: any MetricsFactory

    /// - Parameter routes: one per app, each app's own sink of the push service `name`.
    public init(
        name: String, routes: [Route], deadLetters: any DeadLetterRecorder,
        metricsFactory: any MetricsFactory = MetricsSystem.factory
    ) {
        self.name = name
        self.routes = routes
        byTopic = Dictionary(routes.map { ($0.topic, $0) }, uniquingKeysWith: { first, _ in first })
        self.deadLetters = deadLetters
        self.metricsFactory = metricsFactory
    }

    /// Every app's sink, in the order configured.
    public var sinks: [any DeliverySink] { routes.map(\.sink) }

    public var countsDeliveries: Bool { routes.allSatisfy(\.sink.countsDeliveries) }
    public var isHealthy: Bool { routes.allSatisfy(\.sink.isHealthy) }

    public func lastAnswer(token: String) -> TokenAnswers.Answer? {
        for route in routes {
            if let answer = route.sink.lastAnswer(token: token) { return answer }
        }
        return nil
    }

    public func takes(_ kind: PushTarget.Kind) -> Bool { routes.contains { $0.sink.takes(kind) } }

    public func takes(_ kind: PushTarget.Kind, topic: String) -> Bool { byTopic[topic]?.sink.takes(kind, topic: topic) ?? false }

    public func flush() async throws {
        for route in routes { try await route.sink.flush() }
    }

    public func deliver(_ batch: [Delivery]) async throws {
        guard let first = batch.first else { return }
        // A fan-out's chunk is one update to one match's followers: mostly of one app.
        let topic = first.apns.topic
        if let route = byTopic[topic], batch.allSatisfy({ $0.apns.topic == topic }) {
            try await deliver(batch, to: route)
            return
        }
        var parts: [String: [Delivery]] = [:]
        var stray: [Delivery] = []
        for delivery in batch {
            if byTopic[delivery.apns.topic] != nil {
                parts[delivery.apns.topic, default: []].append(delivery)
            } else if takes(delivery.target.kind) {
                stray.append(delivery)
            }
        }
        if !stray.isEmpty {
            await deadLetters.record(stray, status: 0, body: "no app configured has the topic \(stray[0].apns.topic.prefix(120))")
            Counter(label: "matchcast_deliveries_total", dimensions: [("sink", name), ("outcome", "dead_letter"), ("app", "none")],
                    factory: metricsFactory).increment(by: stray.count)
        }
        let work = parts.compactMap { topic, deliveries in byTopic[topic].map { ($0, deliveries) } }
        let failures = await withTaskGroup(of: (Route, [Delivery], any Error)?.self) { group in
            for (route, deliveries) in work {
                group.addTask {
                    do {
                        try await route.sink.deliver(deliveries)
                        return nil
                    } catch {
                        return (route, deliveries, error)
                    }
                }
            }
            var failures: [(Route, [Delivery], any Error)] = []
            for await failure in group { if let failure { failures.append(failure) } }
            return failures
        }
        guard !failures.isEmpty else { return }
        throw Failure(
            undelivered: failures.flatMap { _, deliveries, error in Self.left(of: deliveries, after: error) },
            errors: failures.map { ($0.0.appId, $0.2) })
    }

    private func deliver(_ batch: [Delivery], to route: Route) async throws {
        do {
            try await route.sink.deliver(batch)
        } catch {
            throw Failure(undelivered: Self.left(of: batch, after: error), errors: [(route.appId, error)])
        }
    }

    /// What an app's sink that threw `error` did not take: what it names, or (when it cannot tell) all it was given.
    private static func left(of deliveries: [Delivery], after error: any Error) -> [Delivery] {
        guard let partial = error as? any PartialDeliveryFailure, !partial.undelivered.isEmpty else { return deliveries }
        return partial.undelivered
    }
}
