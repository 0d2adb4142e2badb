/// Time elapsed on an injected clock since this value was made.
///
/// Sources take `any Clock<Duration>`, whose `Instant` type is erased; keeping a start instant
/// inside a closure lets them measure ages and due times as plain `Duration`s.
struct ElapsedTime: Sendable {
    private let read: @Sendable () -> Duration

    init(_ clock: any Clock<Duration>) {
        read = Self.reader(clock)
    }

    private static func reader<C: Clock>(_ clock: C) -> @Sendable () -> Duration where C.Duration == Duration {
        let start = clock.now
        return { start.duration(to: clock.now) }
    }

    /// Time since creation.
    var now: Duration { read() }
}
