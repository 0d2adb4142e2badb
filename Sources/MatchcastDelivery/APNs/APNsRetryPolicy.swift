/// When a failed APNs request is tried again: exponential backoff with jitter, never sooner than a
/// `Retry-After` asks, at most `maxAttempts` attempts per delivery and no retry whose sleep would end
/// past `totalDeadline` after the first attempt.
///
/// A plain value: `delay(afterAttempt:retryAfter:elapsed:random:)` decides, the sink sleeps.
public struct APNsRetryPolicy: Sendable, Hashable {
    /// Attempts in all, the first included. An immediate retry with a refreshed provider token
    /// (after 403 `ExpiredProviderToken`) is not counted.
    public var maxAttempts: Int
    /// No retry is scheduled whose sleep would end later than this after the first attempt began.
    public var totalDeadline: Duration
    /// The delay after the first failure; it doubles after each further one.
    public var initialBackoff: Duration
    /// The longest backoff between two attempts.
    public var maxBackoff: Duration
    /// The fraction of each backoff (0 ... 1) that may be taken off at random.
    public var jitter: Double
    /// A longer `Retry-After` is cut to this.
    public var maxRetryAfter: Duration

    public init(
        maxAttempts: Int = 5,
        totalDeadline: Duration = .seconds(120),
        initialBackoff: Duration = .seconds(1),
        maxBackoff: Duration = .seconds(30),
        jitter: Double = 0.2,
        maxRetryAfter: Duration = .seconds(60)
    ) {
        self.maxAttempts = maxAttempts
        self.totalDeadline = totalDeadline
        self.initialBackoff = initialBackoff
        self.maxBackoff = maxBackoff
        self.jitter = jitter
        self.maxRetryAfter = maxRetryAfter
    }

    /// The backoff after `attempt` failed attempts (1 for the first): `initialBackoff · 2^(attempt-1)`,
    /// capped at `maxBackoff`, less `jitter · random` of it (`random` in 0 ..< 1).
    public func backoff(afterAttempt attempt: Int, random: Double) -> Duration {
        let doublings = min(max(attempt - 1, 0), 40)
        let base = min(initialBackoff * (1 << doublings), maxBackoff)
        let cut = min(max(jitter, 0), 1) * min(max(random, 0), 1)
        return cut == 0 ? base : base * (1 - cut)
    }

    /// How long to wait before the next attempt, or nil to give up: attempts are used up, or the wait
    /// would end past the total deadline. A `Retry-After` is a floor on the wait.
    public func delay(afterAttempt attempt: Int, retryAfter: Duration?, elapsed: Duration, random: Double) -> Duration? {
        guard attempt < maxAttempts else { return nil }
        var delay = backoff(afterAttempt: attempt, random: random)
        if let retryAfter {
            delay = max(delay, min(retryAfter, maxRetryAfter))
        }
        guard elapsed + delay <= totalDeadline else { return nil }
        return delay
    }
}
