import AsyncHTTPClient
import CoreMetrics
import Foundation
import Logging
import Synchronization

/// Gets, caches and renews the OAuth2 access token every FCM send carries.
///
/// One token is shared by every send. It is replaced once due (`FCMAccessToken.refreshAt`: 5 minutes before expiry,
/// or at half its life when short), or at once when FCM answers 401 to it (`refresh(rejecting:)`). However many sends
/// want a new token at the same moment, one exchange runs and they all wait for it (single flight).
///
/// An exchange posts a fresh `FCMAssertion` to the account's `token_uri`. A 429, a 5xx, a timeout or a connection
/// error is retried with `retry` (never sooner than a `Retry-After`), sleeping on `clock`; any other refusal
/// (`invalid_grant`: a revoked or wrong key, or a clock far off) fails at once as a configuration error,
/// `FCMError` `access_token_refused`. Token age is measured on the injected wall clock `now`.
public final class FCMAccessTokenProvider: Sendable {
    public let account: FCMServiceAccount
    private let exchange: FCMExchange
    private let retry: RetryPolicy
    private let clock: any Clock<Duration>
    private let now: @Sendable () -> Date
    private let metrics: FCMMetrics
    private let logger: Logger

    private struct State {
        var current: FCMAccessToken?
        /// The exchange running now, which every caller wanting a new token waits for.
        var fetch: Task<FCMAccessToken, any Error>?
        var grants = 0
        var lastFailure: String?
    }

    private let state = Mutex(State())

    /// - Parameters:
    ///   - client: the caller's; never shut down here.
    ///   - requestTimeout: one exchange, answer included.
    ///   - retry: how failed exchanges are retried.
    ///   - clock: what retries sleep on.
    ///   - now: wall time, for `iat` and the token's age.
    public convenience init(
        account: FCMServiceAccount, client: HTTPClient, requestTimeout: Duration = .seconds(10),
        retry: RetryPolicy = FCMSinkConfiguration.defaultTokenRetry, clock: any Clock<Duration> = ContinuousClock(),
        now: @escaping @Sendable () -> Date = { Date() }, metricsFactory: any MetricsFactory = MetricsSystem.factory,
        logger: Logger = Logger(label: "matchcast.fcm")
    ) {
        self.init(
            account: account, client: client, requestTimeout: requestTimeout, retry: retry, clock: clock, now: now,
            metrics: FCMMetrics(factory: metricsFactory), logger: logger)
    }

    init(
        account: FCMServiceAccount, client: HTTPClient, requestTimeout: Duration, retry: RetryPolicy,
        clock: any Clock<Duration>, now: @escaping @Sendable () -> Date, metrics: FCMMetrics, logger: Logger
    ) {
        self.account = account
        exchange = FCMExchange(client: client, timeout: requestTimeout, maxBodyBytes: 16 << 10)
        self.retry = retry
        self.clock = clock
        self.now = now
        self.metrics = metrics
        self.logger = logger
    }

    /// How many tokens the endpoint has granted so far.
    public var grantsReceived: Int { state.withLock { $0.grants } }

    /// Why the last exchange failed for good, until one succeeds; nil when the last one succeeded or none ran.
    public var lastFailure: String? { state.withLock { $0.lastFailure } }

    /// The token to send with now: the cached one, or a new one when there is none or it is due.
    /// - Throws: `FCMError` (`access_token_refused`, `access_token_unavailable`); `CancellationError`.
    public func token() async throws -> FCMAccessToken {
        let now = now()
        let step: Step = state.withLock { state in
            if let current = state.current, !current.isDue(at: now) { return .ready(current) }
            return .wait(state.fetch ?? startFetch(&state))
        }
        return try await finish(step)
    }

    /// FCM answered 401 to `rejected`. Returns the token to resend with: the current one if another send already
    /// replaced `rejected`, else a new one (one exchange, however many sends were refused with it).
    public func refresh(rejecting rejected: FCMAccessToken) async throws -> FCMAccessToken {
        let now = now()
        let step: Step = state.withLock { state in
            if let current = state.current, current != rejected, !current.isDue(at: now) { return .ready(current) }
            if let fetch = state.fetch { return .wait(fetch) }
            state.current = nil
            return .wait(startFetch(&state))
        }
        return try await finish(step)
    }

    private enum Step {
        case ready(FCMAccessToken)
        case wait(Task<FCMAccessToken, any Error>)
    }

    private func finish(_ step: Step) async throws -> FCMAccessToken {
        switch step {
        case .ready(let token): return token
        case .wait(let fetch): return try await fetch.value
        }
    }

    /// Starts the one exchange; called under the lock, which it takes again only once the exchange has ended.
    private func startFetch(_ state: inout State) -> Task<FCMAccessToken, any Error> {
        let fetch = Task<FCMAccessToken, any Error> {
            do {
                let token = try await self.exchangeWithRetries()
                self.state.withLock { state in
                    state.current = token
                    state.fetch = nil
                    state.grants += 1
                    state.lastFailure = nil
                }
                return token
            } catch {
                self.state.withLock { state in
                    state.fetch = nil
                    state.lastFailure = "\(error)"
                }
                throw error
            }
        }
        state.fetch = fetch
        return fetch
    }

    /// Exchanges fresh assertions until one is granted, refused, or the retry policy gives up.
    private func exchangeWithRetries() async throws -> FCMAccessToken {
        let elapsed = Stopwatch.start(clock)
        var attempt = 0
        while true {
            attempt += 1
            let sentAt = now()
            let assertion: FCMAssertion
            do {
                assertion = try FCMAssertion(account: account, issuedAt: Int64(sentAt.timeIntervalSince1970.rounded(.down)))
            } catch {
                metrics.accessToken(outcome: "refused")
                throw FCMError(code: .accessTokenRefused("signing the assertion failed"), undelivered: [])
            }
            var retryAfter: Duration?
            let problem: String
            do {
                let answer = try await exchange.post(
                    url: account.tokenURI,
                    headers: [("content-type", "application/x-www-form-urlencoded"), ("accept", "application/json")],
                    body: Array(assertion.formBody.utf8))
                switch FCMAccessToken.grant(status: answer.status, body: answer.body) {
                case .granted(let value, let expiresIn):
                    metrics.accessToken(outcome: "granted")
                    logger.debug("FCM access token granted", metadata: ["fcm.expires_in": "\(expiresIn)", "fcm.attempt": "\(attempt)"])
                    return FCMAccessToken(value: value, issuedAt: sentAt, expiresIn: expiresIn)
                case .refused(let why):
                    metrics.accessToken(outcome: "refused")
                    logger.error("FCM token endpoint refused the service account", metadata: [
                        "fcm.token_uri": "\(account.tokenURI)", "fcm.account": "\(account.clientEmail)", "fcm.why": "\(why)",
                    ])
                    throw FCMError(code: .accessTokenRefused(
                        "\(account.tokenURI) refused the assertion of \(account.clientEmail): \(why); check the service "
                            + "account key (revoked? another project's?) and the system clock"), undelivered: [])
                case .unavailable(let why):
                    problem = why
                    retryAfter = RetryPolicy.retryAfter(answer.retryAfter, now: now())
                }
            } catch let error as FCMError {
                throw error
            } catch {
                if error is CancellationError || Task.isCancelled { throw CancellationError() }
                problem = "\(FCMExchange.errorKind(error)): \(error)"
            }
            metrics.accessToken(outcome: "failed")
            guard let delay = retry.delay(
                afterAttempt: attempt, retryAfter: retryAfter, elapsed: elapsed(), random: Double.random(in: 0..<1))
            else {
                logger.error("FCM token endpoint kept failing", metadata: ["fcm.attempt": "\(attempt)", "fcm.last": "\(problem)"])
                throw FCMError(
                    code: .accessTokenUnavailable("\(account.tokenURI) failed \(attempt) times (last: \(problem))"), undelivered: [])
            }
            logger.notice("FCM token exchange failed; retrying", metadata: [
                "fcm.attempt": "\(attempt)", "fcm.problem": "\(problem)", "fcm.delay": "\(delay)",
            ])
            try await clock.sleep(for: delay)
        }
    }
}
