import Foundation
import MatchcastCore
import Yams

/// Builds a `BrokerConfiguration` from, lowest precedence first: the defaults, a YAML file, the
/// environment, and flags. Unknown keys in the file are errors (a typo must not be ignored).
public enum ConfigurationLoader {
    /// - Parameters:
    ///   - fileText: the YAML text of `--config`, if given.
    ///   - environment: the process environment (only `MATCHCAST_*` names are read).
    ///   - flags: values from the command line, by key path (`http.port`).
    ///   - only: when given, keys of the file and the environment it refuses are ignored (`follow` and
    ///     `replay` read the sink keys only); unknown keys are errors still.
    ///   - serving: `serve`'s: the fcm and webpush sinks send to the tokens and subscriptions devices register, so
    ///     `fcm.registrationToken` and `webpush.subscriptionFile` (one device's, for `follow` and `replay`) are refused
    ///     rather than required.
    public static func load(
        fileText: String?, environment: [String: String], flags: [String: String],
        only: (@Sendable (String) -> Bool)? = nil, serving: Bool = false
    ) throws(ConfigurationError) -> BrokerConfiguration {
        var values: [String: String] = [:]
        let known = ConfigurationKey.byPath
        var document: (values: [String: String], apps: Any?)?
        if let fileText { document = try Self.document(yaml: fileText) }
        if let document {
            values.merge(document.values.filter { known[$0.key] == nil || only?($0.key) ?? true }) { $1 }
        }
        for key in ConfigurationKey.all where only?(key.path) ?? true {
            if let value = environment[key.environmentName] { values[key.path] = value }
        }
        values.merge(flags) { $1 }
        var config = BrokerConfiguration()
        for path in values.keys.sorted() {
            guard let key = known[path] else {
                throw ConfigurationError(key: path, reason: "unknown key")
            }
            try key.apply(&config, values[path]!)
        }
        // A provider group alone: the default feed is not polled beside it unless asked for.
        if values["feed"] == nil, !config.providers.isEmpty { config.feed = "" }
        // The apps (`serve`'s alone: `follow` and `replay` send to one device, with the top level's settings).
        if let document, only == nil {
            config.apps = try appEntries(document.apps).enumerated().map { index, entry throws(ConfigurationError) in
                try AppConfiguration.make(entry: entry, index: index, base: config, environment: environment)
            }
        }
        try validate(config, serving: serving)
        return config
    }

    /// The text of `--config`'s file, or nil when none was given.
    public static func fileText(_ path: String?) throws(ConfigurationError) -> String? {
        guard let path else { return nil }
        do {
            return try String(contentsOfFile: path, encoding: .utf8)
        } catch {
            throw ConfigurationError(key: "--config", reason: "cannot read \(path): \(error.localizedDescription)")
        }
    }

    /// Every key of the YAML document as `a.b` → text; lists become comma-separated. The `apps:` list is not among
    /// them (`document(yaml:)`).
    static func flatten(yaml text: String) throws(ConfigurationError) -> [String: String] {
        try document(yaml: text).values
    }

    /// The YAML document, read once: its keys as `flatten(yaml:)` gives them, and its `apps:` list as it is
    /// (`appEntries` reads it, for `serve` only).
    static func document(yaml text: String) throws(ConfigurationError) -> (values: [String: String], apps: Any?) {
        let node: Any?
        do {
            node = try Yams.load(yaml: text)
        } catch {
            let line = "\(error)".split(separator: "\n").first.map(String.init) ?? "\(error)"
            throw ConfigurationError(key: "(file)", reason: "not valid YAML: \(line.prefix(160))")
        }
        guard let node else { return ([:], nil) }
        guard let root = node as? [String: Any] else {
            throw ConfigurationError(key: "(file)", reason: "expected a mapping of keys at the top level")
        }
        var out: [String: String] = [:]
        try flatten(root, prefix: "", into: &out)
        return (out, root["apps"])
    }

    /// The entries of the `apps:` list (absent or empty: none), each flattened as the top level is (`apns.keyFile`).
    private static func appEntries(_ list: Any?) throws(ConfigurationError) -> [[String: String]] {
        guard let list, !(list is NSNull) else { return [] }
        guard let entries = list as? [Any] else {
            throw ConfigurationError(key: "apps", reason: "expected a list of apps, each a mapping (- id: fantasy)")
        }
        return try entries.enumerated().map { index, item throws(ConfigurationError) in
            guard let entry = item as? [String: Any] else {
                throw ConfigurationError(key: "apps[\(index)]", reason: "expected a mapping (id: fantasy, bundleId: …)")
            }
            var out: [String: String] = [:]
            try flatten(entry, prefix: "", into: &out)
            return out
        }
    }

    private static func flatten(_ map: [String: Any], prefix: String, into out: inout [String: String]) throws(ConfigurationError) {
        for (key, value) in map {
            let path = prefix.isEmpty ? key : prefix + "." + key
            // The apps are read on their own (`document(yaml:)`).
            if path == "apps" { continue }
            switch value {
            case let nested as [String: Any]:
                try flatten(nested, prefix: path, into: &out)
            case let list as [Any]:
                out[path] = try list.map { item throws(ConfigurationError) in
                    guard let entry = item as? [String: Any] else { return "\(item)" }
                    return try providerEntry(entry, path: path)
                }.joined(separator: ",")
            case is NSNull:
                out[path] = ""
            default:
                out[path] = "\(value)"
            }
        }
    }

    /// A provider of the `feeds:` list written as a mapping (`{feed: nhl, tier: official, budget: 10/min}`), as the
    /// one-line form `ProviderEntry` reads: `nhl;budget=10/min;tier=official`, a list value joined by `|`.
    private static func providerEntry(_ entry: [String: Any], path: String) throws(ConfigurationError) -> String {
        guard let feed = entry["feed"] else {
            throw ConfigurationError(key: path, reason: "each entry written as a mapping needs 'feed' (feed: nhl, tier: official)")
        }
        var text = "\(feed)"
        for (key, value) in entry.sorted(by: { $0.key < $1.key }) where key != "feed" {
            let rendered = (value as? [Any]).map { $0.map { "\($0)" }.joined(separator: "|") } ?? "\(value)"
            text += ";\(key)=\(rendered)"
        }
        return text
    }

    private static func validate(_ config: BrokerConfiguration, serving: Bool) throws(ConfigurationError) {
        if config.feed.trimmingCharacters(in: .whitespaces).isEmpty && config.providers.isEmpty {
            throw ConfigurationError(key: "feed", reason: "no feed given: set feed, or the feeds of a provider group")
        }
        guard config.minPollMs <= config.maxPollMs else {
            throw ConfigurationError(key: "polling.minPollMs", reason: "must not exceed polling.maxPollMs")
        }
        if config.sinks.contains("webhook") && config.webhookURL.trimmingCharacters(in: .whitespaces).isEmpty {
            throw ConfigurationError(key: "webhook.url", reason: "the webhook sink needs a URL (--webhook-url)")
        }
        if config.sinks.contains(where: SinkNames.isWebhook) && config.webhookSecret.isEmpty {
            throw ConfigurationError(key: "webhook.secret", reason: "a webhook sink needs a secret (whsec_<base64 key>)")
        }
        if config.sinks.contains("apns") {
            try validateAPNs(config.apns)
        }
        if config.sinks.contains("webpush") {
            try requireSettings(
                of: "webpush",
                [("webpush.vapidKeyFile", config.webPush.vapidKeyFile, "--vapid-key-file", "the VAPID private key file"),
                 ("webpush.vapidSubject", config.webPush.vapidSubject, "--vapid-subject", "a VAPID contact (mailto:you@example.com)")],
                oneDevice: ("webpush.subscriptionFile", config.webPush.subscriptionFile, "--webpush-subscription",
                            "the browser's subscription file (PushSubscription JSON)"),
                served: "the subscription its browser registered (PUT /v1/devices/{id}/webpush-subscription); one subscription file",
                serving: serving)
        }
        if config.sinks.contains("fcm") {
            try requireSettings(
                of: "fcm",
                [("fcm.serviceAccountFile", config.fcm.serviceAccountFile, "--fcm-service-account",
                  "the Firebase project's service account key file")],
                oneDevice: ("fcm.registrationToken", config.fcm.registrationToken, "--fcm-token", "the device's FCM registration token"),
                served: "the FCM token its device registered (PUT /v1/devices/{id}/fcm-token); one token",
                serving: serving)
        }
        if !config.deepLink.isEmpty {
            do {
                _ = try DeepLinkTemplate(config.deepLink)
            } catch {
                throw ConfigurationError(key: "surface.deepLink", reason: "'\(config.deepLink.prefix(80))' \(error)")
            }
        }
        try validateApps(config, serving: serving)
        if config.broadcastMinFollowers > 0, !config.sinks.contains("apns") {
            throw ConfigurationError(
                key: "broadcast.minFollowers",
                reason: "broadcast channels are created and sent through APNs: add --sink apns, or set it to 0")
        }
    }

    /// Each app's sink settings, as the top level's are checked, and the apps together: distinct ids and bundle ids.
    private static func validateApps(_ config: BrokerConfiguration, serving: Bool) throws(ConfigurationError) {
        guard !config.apps.isEmpty else { return }
        let problems = AppCatalog.problems(defaultBundleId: config.topicBundleId, others: config.apps.map(\.catalogEntry))
        if let problem = problems.first { throw ConfigurationError(key: "apps", reason: problem) }
        if config.broadcastMinFollowers > 0 {
            throw ConfigurationError(
                key: "broadcast.minFollowers",
                reason: "broadcast channels serve one app; with apps configured, set it to 0 (every activity is sent to its own token)")
        }
        for app in config.apps {
            var settings = app.settings
            settings.broadcastMinFollowers = 0
            do {
                try validate(settings, serving: serving)
            } catch {
                throw ConfigurationError(key: "apps.\(app.id).\(error.key)", reason: error.reason)
            }
        }
    }

    /// A setting a sink needs: its key, its value, its flag, and what it is.
    private typealias Requirement = (key: String, value: String, flag: String, what: String)

    /// The settings of a sink that sends to devices (fcm, webpush): `required` always; `oneDevice`, the one device or
    /// browser `follow` and `replay` send to, required there and refused by `serve`, which sends each message to
    /// what its device registered (`served` says what, then how the one device is given).
    private static func requireSettings(
        of sink: String, _ required: [Requirement], oneDevice: Requirement, served: String, serving: Bool
    ) throws(ConfigurationError) {
        if serving, !oneDevice.value.trimmingCharacters(in: .whitespaces).isEmpty {
            throw ConfigurationError(
                key: oneDevice.key,
                reason: "serve sends each message to \(served) (\(oneDevice.flag)) is for follow and replay")
        }
        for item in (serving ? [] : [oneDevice]) + required where item.value.trimmingCharacters(in: .whitespaces).isEmpty {
            throw ConfigurationError(key: item.key, reason: "the \(sink) sink needs \(item.what) (\(item.flag))")
        }
    }

    /// What the `apns` sink cannot start without. The key file itself is read when the sink is built
    /// (`SinkFactory`), still before anything is served.
    private static func validateAPNs(_ apns: BrokerConfiguration.APNs) throws(ConfigurationError) {
        let required: [(key: String, value: String, flag: String, what: String)] = [
            ("apns.keyFile", apns.keyFile, "--apns-key-file", "the .p8 signing key file"),
            ("apns.keyId", apns.keyId, "--apns-key-id", "the signing key's 10-character key id"),
            ("apns.teamId", apns.teamId, "--apns-team-id", "the 10-character team id"),
        ]
        for item in required where item.value.trimmingCharacters(in: .whitespaces).isEmpty {
            throw ConfigurationError(key: item.key, reason: "the apns sink needs \(item.what) (\(item.flag))")
        }
        for (key, value) in [("apns.keyId", apns.keyId), ("apns.teamId", apns.teamId)] {
            // Apple issues both as 10 upper-case letters and digits (e.g. ABC123DEFG); anything else is a typo.
            let trimmed = value.trimmingCharacters(in: .whitespaces)
            guard trimmed.utf8.count == 10, trimmed.unicodeScalars.allSatisfy({ $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0)) })
            else {
                throw ConfigurationError(key: key, reason: "'\(value.prefix(64))' is not 10 ASCII letters and digits, as Apple issues it")
            }
        }
    }
}
