import Foundation
import Synchronization

/// Makes and caches the provider token every APNs request carries.
///
/// Apple refuses tokens older than an hour (403 `ExpiredProviderToken`) and tokens replaced more
/// often than every 20 minutes (429 `TooManyProviderTokenUpdates`). So one token is shared by every
/// request and replaced once it is `refreshInterval` old (20 ... 60 minutes; 50 by default). The one
/// exception: when APNs calls the current token expired, `refresh(rejecting:)` replaces it at once.
///
/// Age is measured on the injected wall clock `now`, the same clock `iat` is read from.
public final class APNsTokenSigner: Sendable {
    /// Never refresh sooner than this (Apple's rule).
    public static let minimumRefreshInterval: Duration = .seconds(20 * 60)
    /// Never use a token older than this (Apple's rule).
    public static let maximumTokenAge: Duration = .seconds(60 * 60)
    /// A token APNs refused is replaced at once, but not a token made by such a replacement less than
    /// this long ago: if a fresh token is refused too, the fault is the key or the clock, not age.
    public static let forcedRefreshSpacing: Duration = .seconds(60)

    private struct State {
        var current: APNsProviderToken?
        /// The current token replaced one APNs refused.
        var currentWasForced = false
        var issued = 0
    }

    public let credentials: APNsCredentials
    /// The age at which the cached token is replaced.
    public let refreshInterval: Duration
    private let now: @Sendable () -> Date
    private let state = Mutex(State())

    /// - Parameters:
    ///   - refreshInterval: replace the token at this age; must lie in 20 ... 60 minutes.
    ///   - now: wall time, for `iat` and the token's age.
    /// - Throws: `APNsError` (`config`) for a refresh interval outside Apple's bounds.
    public init(
        credentials: APNsCredentials,
        refreshInterval: Duration = .seconds(50 * 60),
        now: @escaping @Sendable () -> Date = { Date() }
    ) throws(APNsError) {
        guard refreshInterval >= Self.minimumRefreshInterval, refreshInterval < Self.maximumTokenAge else {
            throw .invalidConfiguration("provider token refresh interval must be at least 20 and under 60 minutes")
        }
        self.credentials = credentials
        self.refreshInterval = refreshInterval
        self.now = now
    }

    /// How many tokens have been signed so far.
    public var tokensIssued: Int { state.withLock { $0.issued } }

    /// The token to send now: the cached one, or a new one when there is none or it is due.
    public func currentToken() throws -> APNsProviderToken {
        let seconds = unixSeconds()
        return try state.withLock { state in
            if let current = state.current, !isDue(current, at: seconds) { return current }
            return try issue(&state, at: seconds)
        }
    }

    /// APNs answered 403 `ExpiredProviderToken` to `rejected`. Returns the token to retry with: a new
    /// one if `rejected` is still current (whatever its age), the current one if another request has
    /// already replaced it, or nil when `rejected` was itself made by such a replacement under
    /// `forcedRefreshSpacing` ago (retrying at once would only be refused again).
    public func refresh(rejecting rejected: APNsProviderToken) throws -> APNsProviderToken? {
        let seconds = unixSeconds()
        return try state.withLock { state in
            if let current = state.current, current != rejected {
                return isDue(current, at: seconds) ? try issue(&state, at: seconds) : current
            }
            if let current = state.current, state.currentWasForced,
               seconds - current.issuedAt < Self.forcedRefreshSpacing.components.seconds
            {
                return nil
            }
            let token = try issue(&state, at: seconds)
            state.currentWasForced = true
            return token
        }
    }

    private func isDue(_ token: APNsProviderToken, at seconds: Int64) -> Bool {
        let age = seconds - token.issuedAt
        // A wall clock stepped far back would leave a token "from the future" in use past its hour.
        return age >= refreshInterval.components.seconds || age < -60
    }

    private func issue(_ state: inout State, at seconds: Int64) throws -> APNsProviderToken {
        let token = try APNsProviderToken(credentials: credentials, issuedAt: seconds)
        state.current = token
        state.currentWasForced = false
        state.issued += 1
        return token
    }

    private func unixSeconds() -> Int64 {
        Int64(now().timeIntervalSince1970.rounded(.down))
    }
}
