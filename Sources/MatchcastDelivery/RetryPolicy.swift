import Foundation

/// When a failed request (webhook or APNs) is tried again: exponential backoff with jitter, never sooner than a
/// `Retry-After` asks, at most `maxAttempts` attempts and no retry that would end past `totalDeadline`.
///
/// A plain value: `delay(afterAttempt:retryAfter:elapsed:random:)` decides, the sink sleeps.
public struct RetryPolicy: Sendable, Hashable {
    /// Attempts in all, the first included.
    public var maxAttempts: Int
    /// No retry is scheduled whose sleep would end later than this after the first attempt began.
    public var totalDeadline: Duration
    /// The delay after the first failure; it doubles after each further one.
    public var initialBackoff: Duration
    /// The longest backoff between two attempts.
    public var maxBackoff: Duration
    /// The fraction of each backoff that may be taken off at random (0 ... 1), so that many senders
    /// failing together do not retry together.
    public var jitter: Double
    /// A longer `Retry-After` is cut to this, so one answer cannot park a batch for hours.
    public var maxRetryAfter: Duration

    public init(
        maxAttempts: Int = 8,
        totalDeadline: Duration = .seconds(300),
        initialBackoff: Duration = .milliseconds(500),
        maxBackoff: Duration = .seconds(60),
        jitter: Double = 0.2,
        maxRetryAfter: Duration = .seconds(120)
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
    /// would end past the total deadline. A `Retry-After` is a floor on the wait, never shortened.
    public func delay(afterAttempt attempt: Int, retryAfter: Duration?, elapsed: Duration, random: Double) -> Duration? {
        guard attempt < maxAttempts else { return nil }
        var delay = backoff(afterAttempt: attempt, random: random)
        if let retryAfter {
            delay = max(delay, min(retryAfter, maxRetryAfter))
        }
        guard elapsed + delay <= totalDeadline else { return nil }
        return delay
    }

    /// Reads a `Retry-After` value: delay-seconds (`120`) or an HTTP-date (`Sun, 06 Nov 1994 08:49:37 GMT`,
    /// also the obsolete RFC 850 and asctime forms). A date in the past means "now"; anything else is nil.
    public static func retryAfter(_ value: String?, now: Date) -> Duration? {
        guard let text = value?.trimmingCharacters(in: .whitespaces), !text.isEmpty else { return nil }
        if text.allSatisfy(\.isASCIIDigit) {
            // Absurdly long digit strings are clamped later; do not overflow on them.
            return .seconds(Int64(text.prefix(12)) ?? 0)
        }
        for format in ["EEE, dd MMM yyyy HH:mm:ss zzz", "EEEE, dd-MMM-yy HH:mm:ss zzz", "EEE MMM d HH:mm:ss yyyy"] {
            let formatter = DateFormatter()
            formatter.locale = Locale(identifier: "en_US_POSIX")
            formatter.timeZone = TimeZone(identifier: "GMT")
            formatter.dateFormat = format
            if let date = formatter.date(from: text) {
                let seconds = max(0, date.timeIntervalSince(now))
                return .milliseconds(Int64((seconds * 1000).rounded(.up)))
            }
        }
        return nil
    }

    /// APNs: fewer, quicker attempts than a webhook (a push that is minutes late is worth little).
    public static let apns = RetryPolicy(
        maxAttempts: 5, totalDeadline: .seconds(120), initialBackoff: .seconds(1), maxBackoff: .seconds(30),
        jitter: 0.2, maxRetryAfter: .seconds(60))
}

extension Character {
    fileprivate var isASCIIDigit: Bool { isASCII && isNumber }
}
