import Foundation
import Logging
import MatchcastCore
import MatchcastDelivery
import MatchcastFeeds

/// Everything `matchcast serve` can be told, with the embedded defaults (`Config/matchcast.yaml`
/// states the same values; a test keeps them equal).
public struct BrokerConfiguration: Sendable, Hashable {
    public var host = "127.0.0.1"
    public var port = 8080
    public var maxBodyBytes = 16384
    public var adminKey = ""
    public var store = "sqlite:matchcast.sqlite"
    /// The feed, or several separated by commas (a YAML list, `--feed` given more than once): `FeedSpec.list`.
    /// Empty when only a provider group is configured (`feeds` given, `feed` not).
    public var feed = "fake?speed=60"
    /// The providers of the failover group (the YAML `feeds:` list, `--provider`): `ProviderEntry.list`; empty: no group.
    public var providers = ""
    public var failover = Failover()
    public var sinks = ["stdout"]
    public var webhookSecret = ""
    /// The URL of the bare `webhook` sink (`webhook:URL` names its own).
    public var webhookURL = ""
    /// Deliveries per webhook request at most.
    public var webhookBatchSize = 500
    public var bundleId = "com.example.matchcast"
    public var apns = APNs()
    public var webPush = WebPush()
    public var fcm = FCM()
    /// `surface.deepLink`: where a tap on an Android or browser notification goes, `{matchId}` in it; empty: none.
    public var deepLink = ""
    /// Broadcast channel mode: a live match with at least this many followers gets a channel; 0 is off.
    public var broadcastMinFollowers = 0
    public var defaultPollMs = 10000
    public var minPollMs = 2000
    public var maxPollMs = 300_000
    /// A native or the fake feed's live list serves the matches it shows, which are then not polled on their own.
    public var liveListServesMatches = false
    public var coalesceSeconds = 10.0
    public var staleAfterPolls = 4
    public var minimumStalenessSeconds = 120.0
    public var dismissalSeconds = 900.0
    public var restartAfterSeconds = 27900.0
    public var pushToStartSpacingSeconds = 5.0
    /// The most priority-10 pushes a match's key events get in any hour; the rest go at priority 5.
    public var highPriorityPerHour = ActivityPolicy.defaultHighPriorityPerHour
    /// This replica's name in the lease rows (PostgreSQL store); empty: `<host name>:<pid>`.
    public var replicaId = ""
    /// How long a replica's match leases last unless renewed: how soon a dead replica's matches move.
    public var leaseTTLSeconds = 3.0
    /// The apps served beside the default one, the top level's (the `apps:` list of the file; docs/apps.md).
    public var apps: [AppConfiguration] = []
    public var logLevel = Logger.Level.info
    public var logFormat = LogFormat.text

    /// How log lines are written.
    public enum LogFormat: String, Sendable, Hashable, CaseIterable {
        case text
        case json
    }

    public init() {}

    /// The `apns` section: what the `apns` sink needs. Only read when `sinks` names `apns`.
    public struct APNs: Sendable, Hashable {
        /// The App Store Connect `.p8` signing key (a path; the key itself is never held here).
        public var keyFile = ""
        /// The 10-character key id of that key.
        public var keyId = ""
        /// The 10-character team id.
        public var teamId = ""
        /// The bundle id pushes go to (`apns-topic` is `<topic>.push-type.liveactivity`); empty means `bundleId`.
        public var topic = ""
        public var environment = APNsSinkConfiguration.Environment.production
        /// An https URL replacing the environment's endpoint (a test server); empty for Apple's.
        public var endpoint = ""
        /// A PEM file of the only certificates to trust (a test server's CA); empty for the system roots.
        public var caFile = ""
        /// Requests in flight at once on one connection (HTTP/2 streams), capped by the server's limit.
        public var maxConcurrentRequests = 1000
        /// HTTP/2 connections to APNs at most.
        public var maxConnections = 4
        /// An https URL replacing Apple's channel management endpoint; empty for Apple's (or `endpoint`'s server).
        public var channelsEndpoint = ""

        public init() {}
    }

    /// The `webpush` section: what the `webpush` sink needs (`follow` and `replay`: one browser subscription).
    /// Only read when `sinks` names `webpush`; the files are read when the sink is built.
    public struct WebPush: Sendable, Hashable {
        /// The browser's `PushSubscription.toJSON()`, saved as a file.
        public var subscriptionFile = ""
        /// The VAPID private key (PEM P-256, or base64url), whose public key the web app subscribed with.
        public var vapidKeyFile = ""
        /// The VAPID contact, `mailto:` or `https:`.
        public var vapidSubject = ""

        public init() {}
    }

    /// The `fcm` section: what the `fcm` sink needs (`follow` and `replay`: one Android device's registration token).
    /// Only read when `sinks` names `fcm`; the service account file is read when the sink is built.
    public struct FCM: Sendable, Hashable {
        /// The Firebase project's service account key (JSON, from the console).
        public var serviceAccountFile = ""
        /// The device's FCM registration token, as the app's `FirebaseMessaging.getToken()` gives it.
        public var registrationToken = ""
        /// FCM's HTTP v1 endpoint; another only for a test server.
        public var endpoint = "https://fcm.googleapis.com"

        public init() {}
    }

    /// The `failover` section: how the provider group judges and replaces its providers (`FailoverSettings`).
    public struct Failover: Sendable, Hashable {
        public var failuresBeforeDisable = 3
        public var coolDownSeconds = 60.0
        /// 0: a live match's provider is never checked against the next for showing no change.
        public var staleAfterSeconds = 120.0
        public var attemptTimeoutSeconds = 3.0
        /// The zone of the day in canonical ids (an IANA name).
        public var timeZone = "UTC"
        /// `alias=name` pairs, comma-separated (a YAML list).
        public var aliases = ""

        public init() {}

        /// The group's settings; `timeZone` and `aliases` were checked when they were read.
        public var settings: FailoverSettings {
            var pairs: [String: String] = [:]
            for pair in aliases.split(separator: ",") {
                let sides = pair.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
                if sides.count == 2 { pairs[sides[0]] = sides[1] }
            }
            return FailoverSettings(
                failuresBeforeDisable: failuresBeforeDisable, coolDown: .milliseconds(Int64(coolDownSeconds * 1000)),
                staleAfter: staleAfterSeconds > 0 ? .milliseconds(Int64(staleAfterSeconds * 1000)) : nil,
                attemptTimeout: .milliseconds(Int64(attemptTimeoutSeconds * 1000)),
                identity: GameIdentity(timeZone: TimeZone(identifier: timeZone) ?? TimeZone(identifier: "UTC")!, aliases: pairs))
        }
    }

    /// The bundle id every delivery's topic is built from: `apns.topic` when set, else `bundleId`.
    /// A topic given whole (`….push-type.liveactivity`) counts as its bundle id.
    public var topicBundleId: String {
        let topic = apns.topic.trimmingCharacters(in: .whitespaces)
        guard !topic.isEmpty else { return bundleId }
        let suffix = ".push-type.liveactivity"
        return topic.hasSuffix(suffix) ? String(topic.dropLast(suffix.count)) : topic
    }
}

/// A configuration value that cannot be used; the message is one line naming the key.
public struct ConfigurationError: Error, Sendable, Hashable, CustomStringConvertible {
    public let key: String
    public let reason: String

    public var description: String { "invalid configuration: \(key): \(reason)" }
}
