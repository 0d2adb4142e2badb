import Synchronization

/// A provider's request budget (a free plan's "10 requests a minute"): at most `requests` in any `window`, counted
/// over a sliding window of the times of the last `requests` requests, so no window of that length ever holds more.
public final class RequestBudget: Sendable {
    public let requests: Int
    public let window: Duration
    /// The start times of the last `requests` requests, oldest at `next`.
    private let taken: Mutex<(times: [ContinuousClock.Instant], next: Int)>

    public init(requests: Int, per window: Duration) {
        precondition(requests > 0 && window > .zero, "a budget needs a positive count and window")
        self.requests = requests
        self.window = window
        taken = Mutex(([], 0))
    }

    /// Takes one request if the budget allows it now; nil when it did, else how long until it would.
    public func take(now: ContinuousClock.Instant = .now) -> Duration? {
        taken.withLock { state in
            if state.times.count < requests {
                state.times.append(now)
                return nil
            }
            let oldest = state.times[state.next]
            let free = oldest.advanced(by: window)
            guard free <= now else { return now.duration(to: free) }
            state.times[state.next] = now
            state.next = (state.next + 1) % requests
            return nil
        }
    }

    /// How long until one request would be allowed; zero when it would be now.
    public func wait(now: ContinuousClock.Instant = .now) -> Duration {
        taken.withLock { state in
            guard state.times.count == requests else { return .zero }
            let free = state.times[state.next].advanced(by: window)
            return free <= now ? .zero : now.duration(to: free)
        }
    }

    /// The spacing that spends the budget evenly over `window` among `sharers` polled resources.
    public func spacing(sharers: Int) -> Duration {
        window * max(sharers, 1) / requests
    }

    /// `10/min`, `600/h`, `2/s`: a count per second, minute or hour.
    public convenience init(parsing text: String) throws(FeedError) {
        let parts = text.split(separator: "/", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
        let windows: [String: Duration] = [
            "s": .seconds(1), "sec": .seconds(1), "min": .seconds(60), "m": .seconds(60), "h": .seconds(3600), "hour": .seconds(3600),
        ]
        guard parts.count == 2, let count = Int(parts[0]), (1...1_000_000).contains(count), let window = windows[parts[1].lowercased()]
        else {
            throw .invalidConfiguration("budget '\(text.prefix(40))' is not N/s, N/min or N/h with N in 1...1000000, e.g. 10/min")
        }
        self.init(requests: count, per: window)
    }

    public var description: String {
        window == .seconds(1) ? "\(requests)/s" : window == .seconds(3600) ? "\(requests)/h" : "\(requests)/min"
    }
}
