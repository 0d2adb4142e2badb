import MatchcastStore

extension LiveActivityService {
    /// The most a dead-letter listing returns at once.
    public static let maxDeadLetters = 1000

    /// Dead letters, newest first: what sinks refused for good and will not retry.
    public func deadLetters(limit: Int) async throws(ServiceError) -> [DeadLetter] {
        guard (1...Self.maxDeadLetters).contains(limit) else {
            throw ServiceError(.invalidRequest, "limit must be in 1...\(Self.maxDeadLetters), got \(limit)")
        }
        do {
            return try await store.deadLetters(limit: limit)
        } catch {
            throw ServiceError(.unavailable, "reading dead letters: \(error)")
        }
    }
}
