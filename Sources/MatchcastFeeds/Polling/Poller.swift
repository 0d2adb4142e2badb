/// The polling loop of one source: poll, hand the result on, sleep the delay the source asks for.
///
/// Shaped like a ServiceLifecycle `Service` (one `run()`), without depending on it: the broker adds
/// the conformance and `cancelOnGracefulShutdown()`. `run()` returns when the source says there is
/// nothing more to poll (a final match) or when its task is cancelled; it starts no tasks of its own.
public struct Poller<Source: PollingDataSource>: Sendable {
    public let source: Source
    private let clock: any Clock<Duration>
    private let onResult: @Sendable (PollResult<Source.Outcome>) async -> Void

    /// - Parameters:
    ///   - clock: what the loop sleeps on; a manual clock in tests, a virtual one in replay.
    ///   - onResult: called with every poll's result, in order, before the loop sleeps.
    public init(
        source: Source,
        clock: any Clock<Duration> = ContinuousClock(),
        onResult: @escaping @Sendable (PollResult<Source.Outcome>) async -> Void
    ) {
        self.source = source
        self.clock = clock
        self.onResult = onResult
    }

    /// Polls until the source is done or the task is cancelled. The first poll is immediate.
    public func run() async {
        guard await source.shouldPoll() else { return }
        while !Task.isCancelled {
            let result: PollResult<Source.Outcome>
            do {
                result = try await source.poll()
            } catch {
                return  // only cancellation reaches here
            }
            await onResult(result)
            guard await source.shouldPoll() else { return }
            do {
                try await clock.sleep(for: await source.nextPollDelay())
            } catch {
                return
            }
        }
    }
}
