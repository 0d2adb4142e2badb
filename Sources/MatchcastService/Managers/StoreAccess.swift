import Logging
import MatchcastStore

/// Runs a store call and turns its failure into the service's error: not found and conflict keep
/// their meaning, anything else is `unavailable` (logged, the caller may retry).
struct StoreAccess: Sendable {
    let store: any MatchcastStore
    let logger: Logger

    func callAsFunction<T: Sendable>(_ operation: @Sendable (any MatchcastStore) async throws -> T) async throws(ServiceError) -> T {
        do {
            return try await operation(store)
        } catch let error as StoreError where error == .notFound {
            throw ServiceError(.notFound, error.message.isEmpty ? "not found" : error.message)
        } catch let error as StoreError where error == .conflict {
            throw ServiceError(.conflict, error.message.isEmpty ? "conflict" : error.message)
        } catch let error as StoreError {
            logger.error("store failed", metadata: ["error": "\(error)"])
            throw ServiceError(.unavailable, "storage is unavailable (\(error.reason))")
        } catch {
            throw ServiceError(.unavailable, "storage is unavailable")
        }
    }
}
