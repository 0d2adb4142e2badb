import Foundation

/// One provider's health, as the group judges it from its answers: after `failuresBeforeDisable` failures in a row
/// (errors, timeouts, answers behind what was shown) it is disabled for a cool-down; then it is asked again (a
/// probe), and one more failure disables it again at once, while one good answer brings it back.
struct ProviderHealth: Sendable {
    private(set) var consecutiveFailures = 0
    private(set) var disabledUntil: ContinuousClock.Instant?
    private(set) var lastError: String?

    /// Not disabled, or its cool-down is over (the next request is a probe).
    func isAvailable(at now: ContinuousClock.Instant) -> Bool {
        disabledUntil.map { now >= $0 } ?? true
    }

    /// Returns true when this failure disabled it.
    mutating func failed(_ reason: String, at now: ContinuousClock.Instant, threshold: Int, coolDown: Duration) -> Bool {
        consecutiveFailures += 1
        lastError = reason
        // A probe after a cool-down gets one chance.
        guard disabledUntil != nil || consecutiveFailures >= threshold else { return false }
        disabledUntil = now.advanced(by: coolDown)
        return true
    }

    /// Returns true when this answer brought it back from disabled.
    mutating func succeeded() -> Bool {
        consecutiveFailures = 0
        guard disabledUntil != nil else { return false }
        disabledUntil = nil
        return true
    }
}

/// A provider's state as `/readyz`, `/metrics` and `matchcast feeds status` show it.
public struct ProviderStatus: Sendable, Hashable, Codable {
    public var name: String
    public var tier: String
    /// `healthy`, `disabled` (cooling down) or `probing` (cool-down over, not yet answered well).
    public var state: String
    public var consecutiveFailures: Int
    /// Seconds left of its cool-down while disabled.
    public var coolDownLeftSeconds: Double?
    /// The last failure, without credentials (the feed's public name and path only).
    public var lastError: String?
    /// Its budget (`10/min`), when it has one.
    public var budget: String?
}
