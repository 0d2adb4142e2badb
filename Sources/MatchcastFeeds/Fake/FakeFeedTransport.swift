/// Answers feed requests in-process from a `FakeFeed`, on an injected clock: elapsed time is
/// measured from `start` on `clock`, so a manual clock makes every answer deterministic.
public struct FakeFeedTransport: FeedTransport {
    public let feed: FakeFeed
    private let elapsed: @Sendable () -> Duration

    /// - Parameters:
    ///   - clock: the clock elapsed time is read from.
    ///   - start: the instant the feed started; `clock.now` when nil.
    public init<C: Clock<Duration>>(feed: FakeFeed, clock: C, start: C.Instant? = nil) {
        let origin = start ?? clock.now
        self.feed = feed
        self.elapsed = { origin.duration(to: clock.now) }
    }

    public func fetch(_ request: FeedRequest) async throws -> FeedResponse {
        feed.response(to: request, elapsed: elapsed())
    }
}
