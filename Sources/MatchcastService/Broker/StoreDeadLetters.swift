import Foundation
import Logging
import MatchcastCore
import MatchcastDelivery
import MatchcastStore

/// Keeps a sink's refused deliveries in the store, where `GET /v1/admin/dead-letters` lists them after any restart.
public struct StoreDeadLetters: DeadLetterRecorder {
    private let store: any MatchcastStore
    private let sink: String
    private let now: @Sendable () -> Date
    private let logger: Logger

    public init(store: any MatchcastStore, sink: String, now: @escaping @Sendable () -> Date = { Date() }, logger: Logger) {
        self.store = store
        self.sink = sink
        self.now = now
        self.logger = logger
    }

    public func record(_ deliveries: [Delivery], status: Int, body: String) async {
        let at = now()
        let letters = deliveries.map { DeadLetter(delivery: $0, sink: sink, status: status, reason: body, recordedAt: at) }
        do {
            try await store.recordDeadLetters(letters)
        } catch {
            // Still counted by the sink's metrics and logged here; the letters themselves are lost.
            logger.error("could not keep dead letters", metadata: [
                "sink": "\(sink)", "count": "\(deliveries.count)", "status": "\(status)", "error": "\(error)",
            ])
        }
    }
}
