import Foundation
import Logging
import MatchcastDelivery
import MatchcastFeeds

/// Every configuration key: its path in the YAML file, and how a text value is applied.
/// The environment variable and the file share these paths, so there is one list to keep.
struct ConfigurationKey: Sendable {
    let path: String
    let apply: @Sendable (inout BrokerConfiguration, String) throws(ConfigurationError) -> Void

    /// `http.port` → `MATCHCAST_HTTP_PORT`, `polling.minPollMs` → `MATCHCAST_POLLING_MIN_POLL_MS`.
    var environmentName: String {
        var out = "MATCHCAST_"
        for character in path {
            if character == "." {
                out += "_"
            } else if character.isUppercase {
                out += "_" + String(character)
            } else {
                out += character.uppercased()
            }
        }
        return out
    }

    static let all: [ConfigurationKey] = [
        text("http.host", \.host),
        int("http.port", \.port, 0...65535),
        int("http.maxBodyBytes", \.maxBodyBytes, 1024...(1 << 24)),
        text("adminKey", \.adminKey, allowEmpty: true),
        text("store", \.store),
        text("feed", \.feed, allowEmpty: true),
        ConfigurationKey(path: "feeds") { config, value throws(ConfigurationError) in
            do {
                _ = try ProviderEntry.list(parsing: value)
            } catch {
                throw ConfigurationError(key: "feeds", reason: "\(error)")
            }
            config.providers = value
        },
        int("failover.failuresBeforeDisable", \.failover.failuresBeforeDisable, 1...100),
        seconds("failover.coolDownSeconds", \.failover.coolDownSeconds, 1...86400),
        seconds("failover.staleAfterSeconds", \.failover.staleAfterSeconds, 0...86400),
        seconds("failover.attemptTimeoutSeconds", \.failover.attemptTimeoutSeconds, 0.1...60),
        ConfigurationKey(path: "failover.timeZone") { config, value throws(ConfigurationError) in
            let name = value.trimmingCharacters(in: .whitespaces)
            guard TimeZone(identifier: name) != nil else {
                throw ConfigurationError(key: "failover.timeZone", reason: "'\(value.prefix(60))' is not a time zone name (UTC, America/New_York)")
            }
            config.failover.timeZone = name
        },
        ConfigurationKey(path: "failover.aliases") { config, value throws(ConfigurationError) in
            for pair in value.split(separator: ",") where !pair.trimmingCharacters(in: .whitespaces).isEmpty {
                let sides = pair.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
                guard sides.count == 2, !sides[0].isEmpty, !sides[1].isEmpty else {
                    throw ConfigurationError(key: "failover.aliases", reason: "'\(pair.prefix(80))' is not alias=name (man utd=manchester united)")
                }
            }
            config.failover.aliases = value
        },
        ConfigurationKey(path: "sinks") { config, value throws(ConfigurationError) in
            let sinks = value.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
            guard !sinks.isEmpty else { throw ConfigurationError(key: "sinks", reason: "needs at least one sink") }
            var seen: Set<String> = []
            for sink in sinks {
                guard SinkNames.isKnown(sink) else {
                    throw ConfigurationError(key: "sinks", reason: "'\(sink.prefix(80))' is not \(SinkNames.choices)")
                }
                // The same sink twice would send every push twice.
                guard seen.insert(sink).inserted else {
                    throw ConfigurationError(key: "sinks", reason: "'\(sink.prefix(80))' is given twice")
                }
            }
            config.sinks = sinks
        },
        text("webhook.secret", \.webhookSecret, allowEmpty: true),
        text("webhook.url", \.webhookURL, allowEmpty: true),
        int("webhook.batchSize", \.webhookBatchSize, 1...10000),
        text("bundleId", \.bundleId),
        text("apns.keyFile", \.apns.keyFile, allowEmpty: true),
        text("apns.keyId", \.apns.keyId, allowEmpty: true),
        text("apns.teamId", \.apns.teamId, allowEmpty: true),
        text("apns.topic", \.apns.topic, allowEmpty: true),
        ConfigurationKey(path: "apns.environment") { config, value throws(ConfigurationError) in
            guard let environment = APNsSinkConfiguration.Environment(rawValue: value.trimmingCharacters(in: .whitespaces).lowercased())
            else {
                throw ConfigurationError(key: "apns.environment", reason: "'\(value.prefix(40))' is not sandbox or production")
            }
            config.apns.environment = environment
        },
        endpoint("apns.endpoint", \.apns.endpoint),
        endpoint("apns.channelsEndpoint", \.apns.channelsEndpoint),
        text("webpush.subscriptionFile", \.webPush.subscriptionFile, allowEmpty: true),
        text("webpush.vapidKeyFile", \.webPush.vapidKeyFile, allowEmpty: true),
        text("webpush.vapidSubject", \.webPush.vapidSubject, allowEmpty: true),
        text("fcm.serviceAccountFile", \.fcm.serviceAccountFile, allowEmpty: true),
        text("fcm.registrationToken", \.fcm.registrationToken, allowEmpty: true),
        text("fcm.endpoint", \.fcm.endpoint),
        text("surface.deepLink", \.deepLink, allowEmpty: true),
        int("broadcast.minFollowers", \.broadcastMinFollowers, 0...10_000_000),
        text("apns.caFile", \.apns.caFile, allowEmpty: true),
        int("apns.maxConcurrentRequests", \.apns.maxConcurrentRequests, 1...10000),
        int("apns.maxConnections", \.apns.maxConnections, 1...64),
        int("polling.defaultMs", \.defaultPollMs, 1...86_400_000),
        int("polling.minPollMs", \.minPollMs, 1...86_400_000),
        int("polling.maxPollMs", \.maxPollMs, 1...86_400_000),
        flag("polling.liveListServesMatches", \.liveListServesMatches),
        seconds("activities.coalesceSeconds", \.coalesceSeconds, 0...3600),
        int("activities.staleAfterPolls", \.staleAfterPolls, 1...100),
        seconds("activities.minimumStalenessSeconds", \.minimumStalenessSeconds, 1...86400),
        seconds("activities.dismissalSeconds", \.dismissalSeconds, 0...14400),
        seconds("activities.restartAfterSeconds", \.restartAfterSeconds, 60...28800),
        seconds("activities.pushToStartSpacingSeconds", \.pushToStartSpacingSeconds, 0...3600),
        int("activities.highPriorityPerHour", \.highPriorityPerHour, 0...3600),
        text("replica.id", \.replicaId, allowEmpty: true),
        seconds("replica.leaseSeconds", \.leaseTTLSeconds, 1...3600),
        ConfigurationKey(path: "log.level") { config, value throws(ConfigurationError) in
            guard let level = Logger.Level(rawValue: value.lowercased()) else {
                throw ConfigurationError(key: "log.level", reason: "'\(value.prefix(40))' is not one of \(Logger.Level.allCases.map(\.rawValue).joined(separator: ", "))")
            }
            config.logLevel = level
        },
        ConfigurationKey(path: "log.format") { config, value throws(ConfigurationError) in
            guard let format = BrokerConfiguration.LogFormat(rawValue: value.lowercased()) else {
                throw ConfigurationError(key: "log.format", reason: "'\(value.prefix(40))' is not text or json")
            }
            config.logFormat = format
        },
    ]

    /// `all` by path.
    static let byPath = Dictionary(uniqueKeysWithValues: all.map { ($0.path, $0) })

    /// The keys every command with sinks reads (`follow`, `replay`, `serve`): the sinks and their settings.
    static func isSinkKey(_ path: String) -> Bool {
        path == "sinks" || path == "bundleId" || path.hasPrefix("webhook.") || path.hasPrefix("apns.") || path.hasPrefix("webpush.")
            || path.hasPrefix("fcm.") || path.hasPrefix("surface.")
    }

    private static func text(
        _ path: String, _ keyPath: WritableKeyPath<BrokerConfiguration, String> & Sendable, allowEmpty: Bool = false
    ) -> ConfigurationKey {
        ConfigurationKey(path: path) { config, value throws(ConfigurationError) in
            guard allowEmpty || !value.trimmingCharacters(in: .whitespaces).isEmpty else {
                throw ConfigurationError(key: path, reason: "must not be empty")
            }
            config[keyPath: keyPath] = value
        }
    }

    /// Empty, or an https URL without a path (`https://host:port`).
    private static func endpoint(_ path: String, _ keyPath: WritableKeyPath<BrokerConfiguration, String> & Sendable) -> ConfigurationKey {
        ConfigurationKey(path: path) { config, value throws(ConfigurationError) in
            let endpoint = value.trimmingCharacters(in: .whitespaces)
            if !endpoint.isEmpty {
                var base = endpoint
                while base.hasSuffix("/") { base.removeLast() }
                guard let url = URL(string: base), url.scheme?.lowercased() == "https", url.host?.isEmpty == false,
                      url.path.isEmpty, url.query == nil
                else {
                    throw ConfigurationError(key: path, reason: "'\(value.prefix(80))' is not an https URL without a path (https://host:port)")
                }
            }
            config[keyPath: keyPath] = endpoint
        }
    }

    private static func int(
        _ path: String, _ keyPath: WritableKeyPath<BrokerConfiguration, Int> & Sendable, _ range: ClosedRange<Int>
    ) -> ConfigurationKey {
        ConfigurationKey(path: path) { config, value throws(ConfigurationError) in
            guard let number = Int(value.trimmingCharacters(in: .whitespaces)), range.contains(number) else {
                throw ConfigurationError(key: path, reason: "'\(value.prefix(40))' is not a whole number in \(range.lowerBound)...\(range.upperBound)")
            }
            config[keyPath: keyPath] = number
        }
    }

    /// `true` or `false` (YAML's booleans; in the environment also `1`/`0`, `yes`/`no`, `on`/`off`).
    private static func flag(_ path: String, _ keyPath: WritableKeyPath<BrokerConfiguration, Bool> & Sendable) -> ConfigurationKey {
        ConfigurationKey(path: path) { config, value throws(ConfigurationError) in
            switch value.trimmingCharacters(in: .whitespaces).lowercased() {
            case "true", "1", "yes", "on": config[keyPath: keyPath] = true
            case "false", "0", "no", "off": config[keyPath: keyPath] = false
            default: throw ConfigurationError(key: path, reason: "'\(value.prefix(40))' is not true or false")
            }
        }
    }

    private static func seconds(
        _ path: String, _ keyPath: WritableKeyPath<BrokerConfiguration, Double> & Sendable, _ range: ClosedRange<Double>
    ) -> ConfigurationKey {
        ConfigurationKey(path: path) { config, value throws(ConfigurationError) in
            guard let number = Double(value.trimmingCharacters(in: .whitespaces)), number.isFinite, range.contains(number) else {
                throw ConfigurationError(key: path, reason: "'\(value.prefix(40))' is not a number of seconds in \(range.lowerBound)...\(range.upperBound)")
            }
            config[keyPath: keyPath] = number
        }
    }
}

/// The `--sink` values every command takes.
enum SinkNames {
    static let choices = "stdout, pretty, apns, fcm, webpush, webhook or webhook:URL"

    static func isKnown(_ sink: String) -> Bool {
        ["stdout", "pretty", "apns", "fcm", "webpush", "webhook"].contains(sink) || sink.hasPrefix("webhook:")
    }

    static func isWebhook(_ sink: String) -> Bool { sink == "webhook" || sink.hasPrefix("webhook:") }
}
