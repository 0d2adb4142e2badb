import Foundation

/// When to poll a feed next: the server-driven interval (docs/formats.md, "Feed (native v1)") and the backoff after errors.
///
/// Pure: the same response, `now` and random generator state always give the same delay.
///
/// Precedence for a response, most specific first:
/// 1. the body's `retryAfterMs`;
/// 2. `Retry-After` (delta-seconds or an HTTP-date relative to `now`), only on 200, 304, 429 and 503;
/// 3. `Cache-Control: max-age=N`;
/// 4. the caller's fallback (the last known interval, for a 304), then `defaultInterval`.
///
/// The chosen interval is clamped to `[minInterval, maxInterval]` and then jittered by ±`jitter`.
/// After jitter the delay is floored at `minInterval` again, because the minimum protects the feed
/// and must hold for every poll, but it is not capped at `maxInterval`: polls clamped to the
/// maximum would otherwise all land on the same instant, which is what jitter is there to avoid.
/// The delay therefore lies in `[minInterval, maxInterval × (1 + jitter)]`.
public struct PollTimingPolicy: Sendable, Hashable {
    /// Used when the feed says nothing about timing.
    public var defaultInterval: Duration
    /// Never poll more often than this, whatever the feed asks (errors included).
    public var minInterval: Duration
    /// Never wait longer than this (before jitter), whatever the feed asks.
    public var maxInterval: Duration
    /// Fraction of the interval added or removed at random: 0.1 is ±10%. Clamped to `0...1`.
    public var jitter: Double
    /// The delay after the first consecutive failure; doubles with each further one.
    public var backoffBase: Duration
    /// The longest delay backoff ever reaches.
    public var backoffCap: Duration

    public init(
        defaultInterval: Duration = .seconds(10),
        minInterval: Duration = .seconds(2),
        maxInterval: Duration = .seconds(300),
        jitter: Double = 0.1,
        backoffBase: Duration = .seconds(5),
        backoffCap: Duration = .seconds(300)
    ) {
        self.defaultInterval = defaultInterval
        self.minInterval = minInterval
        self.maxInterval = max(minInterval, maxInterval)
        self.jitter = jitter.isFinite ? min(max(jitter, 0), 1) : 0
        self.backoffBase = backoffBase
        self.backoffCap = max(backoffBase, backoffCap)
    }

    /// The delay before the next poll after `response`, as a caller that has already decoded the body passes it.
    ///
    /// - Parameters:
    ///   - bodyRetryAfterMs: the body's `retryAfterMs`, when the body carried one.
    ///   - now: wall-clock time, for a `Retry-After` HTTP-date.
    ///   - fallback: what to use when the response says nothing; a 304 passes the last known interval.
    public func interval(
        for response: FeedResponse,
        bodyRetryAfterMs: Int?,
        now: Date,
        otherwise fallback: Duration? = nil,
        using rng: inout some RandomNumberGenerator
    ) -> Duration {
        let requested = requestedInterval(for: response, bodyRetryAfterMs: bodyRetryAfterMs, now: now)
        return jittered(clamped(requested ?? fallback ?? defaultInterval), using: &rng)
    }

    /// What the response asks for, before clamping and jitter; nil when it asks for nothing.
    public func requestedInterval(for response: FeedResponse, bodyRetryAfterMs: Int?, now: Date) -> Duration? {
        if let ms = bodyRetryAfterMs, ms >= 0 {
            return .milliseconds(ms)
        }
        if Self.retryAfterStatuses.contains(response.status), let value = response.headers["retry-after"],
            let delay = Self.parseRetryAfter(value, now: now)
        {
            return delay
        }
        if let value = response.headers["cache-control"], let maxAge = Self.parseMaxAge(value) {
            return .seconds(maxAge)
        }
        return nil
    }

    /// `interval` limited to `[minInterval, maxInterval]`.
    public func clamped(_ interval: Duration) -> Duration {
        min(max(interval, minInterval), maxInterval)
    }

    /// `interval` moved by a random fraction in `±jitter`, never below `minInterval`; whole milliseconds.
    public func jittered(_ interval: Duration, using rng: inout some RandomNumberGenerator) -> Duration {
        let ms = Double(interval.wholeMilliseconds)
        let factor = jitter > 0 ? 1 + Double.random(in: -jitter...jitter, using: &rng) : 1
        return max(.milliseconds(Int64((ms * factor).rounded())), minInterval)
    }

    /// The delay after `consecutiveFailures` failures in a row (1 for the first).
    ///
    /// Exponential (`backoffBase × 2^(n-1)`, capped at `backoffCap`) with "equal jitter": half the
    /// step is kept and the other half drawn at random, so retries spread out but never come
    /// sooner than half the step. Never below `minInterval`, never above `backoffCap` (unless the
    /// minimum is larger).
    public func backoff(consecutiveFailures: Int, using rng: inout some RandomNumberGenerator) -> Duration {
        let base = max(backoffBase.wholeMilliseconds, 1)
        let cap = max(backoffCap.wholeMilliseconds, base)
        // 2^(n-1), stopping as soon as the cap is reached so the product never overflows.
        var step = base
        var doublings = max(consecutiveFailures, 1) - 1
        while doublings > 0 && step < cap {
            step = step > cap / 2 ? cap : step * 2
            doublings -= 1
        }
        step = min(step, cap)
        let half = step / 2
        let delay = half + Int64.random(in: 0...(step - half), using: &rng)
        return max(.milliseconds(delay), minInterval)
    }

    // MARK: Header parsing

    /// RFC 9110 §10.2.3 lets `Retry-After` ride on any status; the contract honours it where a feed
    /// plausibly means "come back later": success, unchanged, rate limited, unavailable.
    static let retryAfterStatuses: Set<Int> = [200, 304, 429, 503]

    /// `Retry-After: 120` or `Retry-After: Wed, 21 Oct 2026 07:28:00 GMT`; a date in the past is zero.
    static func parseRetryAfter(_ value: String, now: Date) -> Duration? {
        let text = String(value.trimmingHTTPWhitespace())
        if let seconds = Self.parseDeltaSeconds(text) {
            return .seconds(seconds)
        }
        guard let date = HTTPDate.parse(text) else { return nil }
        let ms = (date.timeIntervalSince(now) * 1000).rounded()
        return .milliseconds(Int64(max(0, min(ms, Double(Int64.max / 2)))))
    }

    /// `max-age=N` (or `max-age="N"`) among the comma-separated directives of `Cache-Control`.
    static func parseMaxAge(_ value: String) -> Int64? {
        for directive in value.split(separator: ",") {
            let parts = directive.split(separator: "=", maxSplits: 1)
            guard parts.count == 2,
                parts[0].trimmingHTTPWhitespace().lowercased() == "max-age"
            else { continue }
            return parseDeltaSeconds(String(parts[1].trimmingHTTPWhitespace().trimming { $0 == "\"" }))
        }
        return nil
    }

    /// Non-negative whole seconds, as digits only; absurdly large values saturate rather than overflow.
    private static func parseDeltaSeconds(_ text: String) -> Int64? {
        guard !text.isEmpty, text.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }) else {
            return nil
        }
        return Int64(text) ?? Int64(Int32.max)
    }
}

extension Duration {
    /// The duration in whole milliseconds, rounded toward zero.
    var wholeMilliseconds: Int64 {
        let (seconds, attoseconds) = components
        let (product, overflow) = seconds.multipliedReportingOverflow(by: 1000)
        if overflow { return seconds < 0 ? .min : .max }
        return product + attoseconds / 1_000_000_000_000_000
    }
}
