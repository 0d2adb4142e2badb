/// A feed resource as the broker sees it: cache-first load, forced refresh, whether to keep
/// polling, and when to poll next.
public protocol DataSource: Sendable {
    associatedtype Value: Sendable

    /// The cached value while it is fresh (before the next poll is due), else a fetch.
    func load() async throws -> Value
    /// Always fetches. Throws `FeedError` when the feed gave nothing usable.
    func refresh() async throws -> Value
    /// False once polling can no longer change anything (a final match).
    func shouldPoll() async -> Bool
    /// How long until the next poll is due; zero before the first one.
    func nextPollDelay() async -> Duration
}

/// A `DataSource` whose polls report everything that happened, not just a value:
/// unchanged, stale and failed polls too. `Poller` drives these.
public protocol PollingDataSource: DataSource {
    associatedtype Outcome: Sendable

    /// Fetches once and takes the answer in. Failures are outcomes; throws only `CancellationError`.
    func poll() async throws -> PollResult<Outcome>
}
