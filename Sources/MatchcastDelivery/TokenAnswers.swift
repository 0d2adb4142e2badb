import Foundation
import MatchcastCore
import Synchronization

/// The last answer a push service gave for each device token this process sent to, for the device diagnostics
/// ("what did APNs last say about this token"). Kept in memory and bounded: two generations of `capacity / 2` tokens
/// each, the older let go when the newer fills, so a token sent to recently is always found and the oldest are
/// forgotten first. A restart forgets it, and each replica knows only its own sends; refusals of dead tokens are also
/// kept durably (`TokenRefusal`). Recording a batch takes the lock once, not once per answer.
public final class TokenAnswers: Sendable {
    public struct Answer: Sendable, Hashable, Codable {
        /// The HTTP status (200 accepted, 410 gone, ...).
        public var status: Int
        /// The service's reason (`Unregistered`, `BadDeviceToken`, ...); absent when it gave none.
        public var reason: String?
        public var at: Date

        public init(status: Int, reason: String?, at: Date) {
            self.status = status
            self.reason = reason
            self.at = at
        }
    }

    private struct Generations {
        // Keyed by the token as kept: an APNs token's 33 bytes, not a 112-byte string per entry.
        var current: [CompactToken: Answer] = [:]
        var previous: [CompactToken: Answer] = [:]
    }

    private let generations = Mutex(Generations())
    private let half: Int

    /// The default keeps the last answers of about as many tokens as a large fan-out sends to.
    public init(capacity: Int = 200_000) {
        half = max(1, capacity / 2)
    }

    /// The answers of one round of requests, all given at `at`.
    public func record(_ answers: [(token: CompactToken, status: Int, reason: String?)], at: Date) {
        guard !answers.isEmpty else { return }
        generations.withLock { state in
            for answer in answers {
                if state.current.count >= half {
                    // Sized once for a whole generation: no rehash as it fills.
                    state.previous = state.current
                    state.current = Dictionary(minimumCapacity: half)
                }
                if state.current.isEmpty, state.current.capacity < half { state.current.reserveCapacity(half) }
                state.current[answer.token] = Answer(status: answer.status, reason: answer.reason, at: at)
            }
        }
    }

    /// The last answer for `token`, if it is still kept.
    public func last(token: String) -> Answer? {
        let token = CompactToken(token)
        return generations.withLock { $0.current[token] ?? $0.previous[token] }
    }
}
