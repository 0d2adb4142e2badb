/// Time since a start, on an injected clock whatever its instant type: the sinks measure retry
/// budgets and due times as plain `Duration`s on the clock their retries sleep on.
enum Stopwatch {
    /// A reading of the time elapsed on `clock` since this call.
    static func start(_ clock: any Clock<Duration>) -> @Sendable () -> Duration {
        // Opened from a parameter: opening the stored existential directly fails to type-check once
        // Foundation is imported (Swift 6.3).
        start(opened: clock)
    }

    private static func start<C: Clock>(opened clock: C) -> @Sendable () -> Duration where C.Duration == Duration {
        let start = clock.now
        return { start.duration(to: clock.now) }
    }
}

extension Duration {
    /// Whole nanoseconds, rounded down, saturating.
    var wholeNanoseconds: Int64 {
        let (seconds, attoseconds) = components
        let (product, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        return overflow ? .max : product + attoseconds / 1_000_000_000
    }
}
