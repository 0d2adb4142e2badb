import ArgumentParser
import Foundation

/// The sink flags of `follow`, `replay` and `serve`: one set, the same names, configuration keys and
/// environment variables (`MATCHCAST_` + the key path) for every command. `SinkFactory` builds the
/// sinks from the configuration these make.
struct SinkOptions: ParsableArguments {
    @Option(help: "stdout, pretty, webhook (with --webhook-url), webhook:URL, apns, fcm or webpush; repeat for several.")
    var sink: [String] = []
    @Option(help: "The URL the webhook sink posts to.") var webhookUrl: String?
    @Option(help: "whsec_<base64 key> for webhook sinks.") var webhookSecret: String?
    @Option(help: "Deliveries per webhook request at most.") var webhookBatchSize: Int?
    @Option(help: "The APNs .p8 signing key file (for --sink apns).") var apnsKeyFile: String?
    @Option(help: "The signing key's 10-character key id.") var apnsKeyId: String?
    @Option(help: "The 10-character team id.") var apnsTeamId: String?
    @Option(help: "The bundle id APNs pushes go to (default: --bundle-id).") var apnsTopic: String?
    @Option(help: "production or sandbox.") var apnsEnvironment: String?
    @Option(help: "https://host:port instead of Apple's endpoint (a test server).") var apnsEndpoint: String?
    @Option(help: "A PEM file of the only certificates to trust for APNs (a test server's CA).") var apnsCaFile: String?
    @Option(help: "HTTP/2 connections to APNs at most.") var apnsMaxConnections: Int?
    @Option(help: "APNs requests in flight per connection.") var apnsMaxConcurrentRequests: Int?
    @Option(help: "https://host:port instead of Apple's channel management endpoint.") var apnsChannelsEndpoint: String?
    @Option(help: "The Firebase project's service account key file (for --sink fcm).") var fcmServiceAccount: String?
    @Option(help: "The Android device's FCM registration token (for --sink fcm: follow and replay; serve sends to those devices register).") var fcmToken: String?
    @Option(help: "http(s)://host:port instead of FCM's endpoint (a test server).") var fcmEndpoint: String?
    @Option(help: "The browser's PushSubscription JSON file (for --sink webpush: follow and replay).") var webpushSubscription: String?
    @Option(help: "The VAPID private key file (PEM P-256) the web app's applicationServerKey belongs to.") var vapidKeyFile: String?
    @Option(help: "The VAPID contact for the push service: mailto:you@example.com or an https URL.") var vapidSubject: String?
    @Option(help: "Where a tap on an Android or browser notification goes, {matchId} in it: myapp://match/{matchId}.") var deepLink: String?

    /// Each flag by the configuration key it sets: the one table for flags, keys and error messages.
    static let flagsByKey: [String: String] = [
        "sinks": "--sink", "webhook.url": "--webhook-url", "webhook.secret": "--webhook-secret",
        "webhook.batchSize": "--webhook-batch-size", "apns.keyFile": "--apns-key-file", "apns.keyId": "--apns-key-id",
        "apns.teamId": "--apns-team-id", "apns.topic": "--apns-topic", "apns.environment": "--apns-environment",
        "apns.endpoint": "--apns-endpoint", "apns.caFile": "--apns-ca-file", "apns.maxConnections": "--apns-max-connections",
        "apns.maxConcurrentRequests": "--apns-max-concurrent-requests", "apns.channelsEndpoint": "--apns-channels-endpoint",
        "bundleId": "--bundle-id", "webpush.subscriptionFile": "--webpush-subscription", "webpush.vapidKeyFile": "--vapid-key-file",
        "webpush.vapidSubject": "--vapid-subject", "fcm.serviceAccountFile": "--fcm-service-account",
        "fcm.registrationToken": "--fcm-token", "fcm.endpoint": "--fcm-endpoint", "surface.deepLink": "--deep-link",
    ]

    /// The flags given, by configuration key.
    var flags: [String: String] {
        var flags: [String: String] = [:]
        flags["sinks"] = sink.isEmpty ? nil : sink.joined(separator: ",")
        flags["webhook.url"] = webhookUrl
        flags["webhook.secret"] = webhookSecret
        flags["webhook.batchSize"] = webhookBatchSize.map(String.init)
        flags["apns.keyFile"] = apnsKeyFile
        flags["apns.keyId"] = apnsKeyId
        flags["apns.teamId"] = apnsTeamId
        flags["apns.topic"] = apnsTopic
        flags["apns.environment"] = apnsEnvironment
        flags["apns.endpoint"] = apnsEndpoint
        flags["apns.caFile"] = apnsCaFile
        flags["apns.maxConnections"] = apnsMaxConnections.map(String.init)
        flags["apns.maxConcurrentRequests"] = apnsMaxConcurrentRequests.map(String.init)
        flags["apns.channelsEndpoint"] = apnsChannelsEndpoint
        flags["webpush.subscriptionFile"] = webpushSubscription
        flags["webpush.vapidKeyFile"] = vapidKeyFile
        flags["webpush.vapidSubject"] = vapidSubject
        flags["fcm.serviceAccountFile"] = fcmServiceAccount
        flags["fcm.registrationToken"] = fcmToken
        flags["fcm.endpoint"] = fcmEndpoint
        flags["surface.deepLink"] = deepLink
        return flags
    }

    /// The sink part of the configuration for `follow` and `replay`: defaults < `--config` file <
    /// environment < flags, reading only the sink keys (`sinks`, `bundleId`, `webhook.*`, `apns.*`, `webpush.*`, `fcm.*`).
    /// - Parameter extra: the command's own flags by key (`bundleId`, or `sinks` for `--pretty`).
    func configuration(
        configFile: String?, extra: [String: String], environment: [String: String] = ProcessInfo.processInfo.environment
    ) throws(ConfigurationError) -> BrokerConfiguration {
        return try ConfigurationLoader.load(
            fileText: try ConfigurationLoader.fileText(configFile), environment: environment, flags: flags.merging(extra) { $1 }, only: ConfigurationKey.isSinkKey)
    }

    /// One line for stderr naming the flag (and key) at fault.
    static func message(_ error: ConfigurationError) -> String {
        guard let flag = flagsByKey[error.key] else { return error.description }
        return "\(flag) (\(error.key)): \(error.reason)"
    }
}

/// A device token given on the command line: hex, an even number of digits, 64 to 512 of them.
enum TokenArgument {
    /// Nil when `value` is a token; else why not, naming `flag`.
    static func problem(_ value: String, flag: String) -> String? {
        let utf8 = value.utf8
        let isHex = utf8.allSatisfy { (48...57).contains($0) || (65...70).contains($0) || (97...102).contains($0) }
        guard isHex else { return "\(flag): the token is not hex (0-9, a-f)" }
        guard (64...512).contains(utf8.count), utf8.count % 2 == 0 else {
            return "\(flag): the token has \(utf8.count) hex digits; a device token has an even number, 64 to 512"
        }
        return nil
    }
}
