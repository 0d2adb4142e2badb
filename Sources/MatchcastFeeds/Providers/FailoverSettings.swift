import Foundation

/// How a provider group judges and replaces its providers (`failover.*` in the configuration).
public struct FailoverSettings: Sendable {
    /// Failures (errors, timeouts, stale answers) in a row that disable a provider.
    public var failuresBeforeDisable: Int
    /// How long a disabled provider is left alone before it is probed again.
    public var coolDown: Duration
    /// A live match whose provider has shown no change for this long is checked against the next provider; nil: never.
    public var staleAfter: Duration?
    /// The longest one provider is waited for before the next is asked (bounded further by the match's own interval).
    public var attemptTimeout: Duration
    /// How long a schedule answer is reused.
    public var scheduleTTL: Duration
    /// How far apart two providers' start times of one game may be (more apart: two games, as in a doubleheader).
    public var startTolerance: Duration
    public var identity: GameIdentity

    public init(
        failuresBeforeDisable: Int = 3, coolDown: Duration = .seconds(60), staleAfter: Duration? = .seconds(120),
        attemptTimeout: Duration = .seconds(3), scheduleTTL: Duration = .seconds(300), startTolerance: Duration = .seconds(90 * 60),
        identity: GameIdentity = GameIdentity()
    ) {
        self.failuresBeforeDisable = failuresBeforeDisable
        self.coolDown = coolDown
        self.staleAfter = staleAfter
        self.attemptTimeout = attemptTimeout
        self.scheduleTTL = scheduleTTL
        self.startTolerance = startTolerance
        self.identity = identity
    }
}
