/// Polls `condition` every `interval` until it holds or `seconds` of wall-clock time have passed, and returns
/// whether it held. For tests that wait on real sockets and processes; the limit is only a safety net.
public func eventually(
    within seconds: Double = 60, every interval: Duration = .milliseconds(10), _ condition: () async throws -> Bool
) async throws -> Bool {
    let deadline = ContinuousClock.now + .seconds(seconds)
    while ContinuousClock.now < deadline {
        if try await condition() { return true }
        try await Task.sleep(for: interval)
    }
    return try await condition()
}
