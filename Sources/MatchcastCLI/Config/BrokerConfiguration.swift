import Logging

/// Everything `matchcast serve` can be told, with the embedded defaults (`Config/matchcast.yaml`
/// states the same values; a test keeps them equal).
public struct BrokerConfiguration: Sendable, Hashable {
    public var host = "127.0.0.1"
    public var port = 8080
    public var maxBodyBytes = 16384
    public var adminKey = ""
    public var store = "sqlite:matchcast.sqlite"
    public var feed = "fake?speed=60"
    public var sinks = ["stdout"]
    public var webhookSecret = ""
    public var bundleId = "com.example.matchcast"
    public var defaultPollMs = 10000
    public var minPollMs = 2000
    public var maxPollMs = 300_000
    public var coalesceSeconds = 10.0
    public var staleAfterPolls = 4
    public var minimumStalenessSeconds = 120.0
    public var dismissalSeconds = 900.0
    public var restartAfterSeconds = 27900.0
    public var pushToStartSpacingSeconds = 5.0
    public var logLevel = Logger.Level.info
    public var logFormat = LogFormat.text

    /// How log lines are written.
    public enum LogFormat: String, Sendable, Hashable, CaseIterable {
        case text
        case json
    }

    public init() {}
}

/// A configuration value that cannot be used; the message is one line naming the key.
public struct ConfigurationError: Error, Sendable, Hashable, CustomStringConvertible {
    public let key: String
    public let reason: String

    public var description: String { "invalid configuration: \(key): \(reason)" }
}
