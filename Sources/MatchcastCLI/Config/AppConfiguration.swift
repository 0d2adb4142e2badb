import Foundation
import MatchcastCore

/// One app of the `apps:` list (docs/apps.md): its id, its scoped admin key, and its sink settings, which are the top
/// level's with the app's own keys applied over them (a team's APNs key or a company's Firebase project can serve
/// several apps; the bundle id, the APNs topic and the admin key are never taken from the top level).
public struct AppConfiguration: Sendable, Hashable {
    public var id: String
    /// Bearer key for admin calls about this app's devices only; empty: none.
    public var adminKey = ""
    /// The top level's settings with the app's keys applied; only the sink settings (`bundleId`, `apns.*`, `fcm.*`,
    /// `webpush.*`) are read from it.
    public var settings: BrokerConfiguration

    /// The app's keys, as paths below its entry: the sink settings that differ per app.
    static let keys: Set<String> = [
        "bundleId", "apns.keyFile", "apns.keyId", "apns.teamId", "apns.topic", "apns.environment", "apns.endpoint",
        "apns.caFile", "apns.maxConcurrentRequests", "apns.maxConnections", "fcm.serviceAccountFile", "fcm.endpoint",
        "webpush.vapidKeyFile", "webpush.vapidSubject",
    ]

    /// The environment variable of an app's admin key: `MATCHCAST_APP_FANTASY_ADMIN_KEY` for `fantasy`.
    public static func adminKeyVariable(appId: String) -> String {
        "MATCHCAST_APP_" + appId.uppercased().replacingOccurrences(of: "-", with: "_") + "_ADMIN_KEY"
    }

    /// The catalog entry: the app's id and the bundle id its deliveries' topic is made from.
    public var catalogEntry: AppCatalog.App { AppCatalog.App(id: id, bundleId: settings.topicBundleId) }

    /// The app of one `apps:` entry (its keys flattened to `a.b` paths), over `base`, the top level.
    static func make(
        entry: [String: String], index: Int, base: BrokerConfiguration, environment: [String: String]
    ) throws(ConfigurationError) -> AppConfiguration {
        guard let id = entry["id"]?.trimmingCharacters(in: .whitespaces), !id.isEmpty else {
            throw ConfigurationError(key: "apps[\(index)].id", reason: "each app needs an id (id: fantasy)")
        }
        guard AppCatalog.isAppId(id), id != AppCatalog.defaultId else {
            throw ConfigurationError(
                key: "apps[\(index)].id",
                reason: id == AppCatalog.defaultId
                    ? "'default' is the app configured at the top level; give this one another id"
                    : "'\(id.prefix(40))' is not 1 to 32 lower-case letters, digits and -, starting with a letter or digit")
        }
        var settings = base
        settings.apps = []
        settings.adminKey = ""
        // The default app's identity is its own: an app names its own bundle id and topic.
        settings.apns.topic = ""
        guard entry["bundleId"] != nil || entry["apns.topic"] != nil else {
            throw ConfigurationError(key: "apps.\(id).bundleId", reason: "each app needs its bundle id (bundleId: com.example.fantasy)")
        }
        let known = ConfigurationKey.byPath
        for path in entry.keys.sorted() where path != "id" && path != "adminKey" {
            guard keys.contains(path), let key = known[path] else {
                throw ConfigurationError(
                    key: "apps.\(id).\(path)",
                    reason: "not a key an app sets (\(keys.sorted().joined(separator: ", ")), adminKey)")
            }
            do {
                try key.apply(&settings, entry[path]!)
            } catch {
                throw ConfigurationError(key: "apps.\(id).\(error.key)", reason: error.reason)
            }
        }
        let adminKey = environment[adminKeyVariable(appId: id)] ?? entry["adminKey"] ?? ""
        return AppConfiguration(id: id, adminKey: adminKey, settings: settings)
    }
}
