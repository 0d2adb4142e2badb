import Foundation
import Synchronization

/// VAPID tokens kept per push service origin and reused until shortly before they expire (RFC 8292 §2 lets one token
/// serve every push to an origin for up to 24 hours). Signing one (ES256) costs about a third of encrypting a
/// message, so a sink that signed per push spent a quarter of its work on tokens it did not need
/// (docs/performance-history.md, "Web Push: what one message costs a core").
public final class VAPIDTokenCache: Sendable {
    /// How long a new token lives.
    public let lifetime: Duration
    /// A token with less than this left is replaced: a push in flight or retried must not arrive with one expired.
    public let renewBefore: Duration

    private struct Token {
        var value: String
        var expiresAt: Date
    }

    private let vapid: VAPIDCredentials
    private let tokens = Mutex<[String: Token]>([:])
    private let signed = Atomic<Int>(0)

    public init(vapid: VAPIDCredentials, lifetime: Duration = .seconds(12 * 3600), renewBefore: Duration = .seconds(3600)) {
        self.vapid = vapid
        self.lifetime = min(lifetime, VAPIDCredentials.maximumLifetime)
        self.renewBefore = min(renewBefore, self.lifetime / 2)
    }

    /// Tokens signed so far (tests).
    public var tokensSigned: Int { signed.load(ordering: .relaxed) }

    /// The `Authorization` value for a push to `endpoint` at `now`: the origin's token while it has more than
    /// `renewBefore` left, else a new one.
    public func authorization(for endpoint: URL, now: Date) throws(VAPIDCredentials.Failure) -> String {
        let origin = try VAPIDCredentials.origin(of: endpoint)
        let renewAt = now.addingTimeInterval(TimeInterval(renewBefore.components.seconds))
        if let token = tokens.withLock({ $0[origin] }), token.expiresAt > renewAt { return token.value }
        let made = try vapid.authorization(for: endpoint, now: now, lifetime: lifetime)
        signed.add(1, ordering: .relaxed)
        tokens.withLock { $0[origin] = Token(value: made.value, expiresAt: made.expiresAt) }
        return made.value
    }
}
