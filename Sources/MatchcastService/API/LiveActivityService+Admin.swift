import MatchcastCore
import MatchcastStore

extension LiveActivityService {
    /// The most a dead-letter listing returns at once.
    public static let maxDeadLetters = 1000

    /// Dead letters, newest first: what sinks refused for good and will not retry. With `app` (an app's scoped admin
    /// key), only those to that app's devices, by their topic, among the newest `maxDeadLetters`.
    public func deadLetters(limit: Int, app: String? = nil) async throws(ServiceError) -> [DeadLetter] {
        guard (1...Self.maxDeadLetters).contains(limit) else {
            throw ServiceError(.invalidRequest, "limit must be in 1...\(Self.maxDeadLetters), got \(limit)")
        }
        do {
            guard let app else { return try await store.deadLetters(limit: limit) }
            let topic = apps.app(id: app)?.topic
            return Array(try await store.deadLetters(limit: Self.maxDeadLetters).filter { $0.delivery.apns.topic == topic }.prefix(limit))
        } catch {
            throw ServiceError(.unavailable, "reading dead letters: \(error)")
        }
    }
}
