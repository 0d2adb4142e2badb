/// The apps one deployment serves (docs/apps.md): each an id and the bundle id its pushes carry as their topic.
///
/// The app configured at the top level is `default`; others are added by id. A device belongs to one app for life,
/// fixed when it registers and written into its id: `<app>:dev_…` for another app, a plain `dev_…` for the default
/// one (so every device registered before apps existed is the default app's, unchanged). A fan-out thus knows each
/// activity's app from its device id, with no lookup (`topic(ofDevice:)`); and every delivery's topic (`apns.topic`, stored in every
/// outbox row already) names its app, which is how the sinks pick the app's credentials.
public struct AppCatalog: Sendable, Hashable {
    /// The id of the app configured at the top level.
    public static let defaultId = "default"

    /// One app: its id and its bundle id.
    public struct App: Sendable, Hashable {
        public let id: String
        public let bundleId: String
        /// `<bundle id>.push-type.liveactivity`: the topic of every delivery to the app's devices.
        public let topic: String

        public init(id: String, bundleId: String) {
            self.id = id
            self.bundleId = bundleId
            topic = APNsHeaders.topic(bundleId: bundleId)
        }
    }

    /// The default app, then the others in the order configured.
    public let apps: [App]
    private let byId: [String: App]
    private let byTopic: [String: App]

    /// `others` with the default app's id, or an id or topic given twice, are left out (`problems` names them).
    public init(defaultBundleId: String, others: [App] = []) {
        var apps = [App(id: Self.defaultId, bundleId: defaultBundleId)]
        var byId = [Self.defaultId: apps[0]], byTopic = [apps[0].topic: apps[0]]
        for app in others where byId[app.id] == nil && byTopic[app.topic] == nil {
            apps.append(app)
            byId[app.id] = app
            byTopic[app.topic] = app
        }
        self.apps = apps
        self.byId = byId
        self.byTopic = byTopic
    }

    /// Why `others` cannot be served beside a default app of `defaultBundleId`, one line each; empty when they can.
    public static func problems(defaultBundleId: String, others: [App]) -> [String] {
        var problems: [String] = []
        var ids: Set<String> = [defaultId], topics = [APNsHeaders.topic(bundleId: defaultBundleId): defaultId]
        for app in others {
            if !isAppId(app.id) {
                problems.append("'\(app.id.prefix(40))' is not an app id (1 to 32 lower-case letters, digits and -, starting with a letter or digit)")
            } else if !ids.insert(app.id).inserted {
                problems.append(app.id == defaultId
                    ? "'default' is the id of the app configured at the top level"
                    : "app '\(app.id)' is given twice")
            }
            if let other = topics[app.topic] {
                problems.append("apps '\(other)' and '\(app.id.prefix(40))' have the same bundle id \(app.bundleId.prefix(80)): a push's topic must name one app")
            } else {
                topics[app.topic] = app.id
            }
        }
        return problems
    }

    /// Whether more than the default app is served.
    public var hasSeveral: Bool { apps.count > 1 }

    public var defaultApp: App { apps[0] }

    public func app(id: some StringProtocol) -> App? { byId[String(id)] }

    /// The app whose deliveries carry `topic`, if any.
    public func app(topic: String) -> App? { byTopic[topic] }

    /// The topic of deliveries to `deviceId`'s activities, its app's; nil for a device of an app not (or no longer)
    /// served, to which nothing is to be sent: not with another app's credentials, whatever apps are left.
    public func topic(ofDevice deviceId: String) -> String? {
        guard let appId = Self.appId(ofDevice: deviceId) else { return apps[0].topic }
        return byId[String(appId)]?.topic
    }

    /// The app id written in a device id: nil for the default app's (`dev_…`), `fantasy` for `fantasy:dev_…`.
    public static func appId(ofDevice deviceId: String) -> Substring? {
        let utf8 = deviceId.utf8
        // Searched in the id's contiguous bytes where it has them (every native string): a fan-out asks this of every
        // delivery, and stepping through a `UTF8View` index by index costs more than the search itself.
        let found = utf8.withContiguousStorageIfAvailable { $0.firstIndex(of: UInt8(ascii: ":")) }
        let offset = found ?? utf8.firstIndex(of: UInt8(ascii: ":")).map { utf8.distance(from: utf8.startIndex, to: $0) }
        guard let offset else { return nil }
        return deviceId[..<utf8.index(utf8.startIndex, offsetBy: offset)]
    }

    /// Whether `deviceId` belongs to the app `appId`.
    public static func device(_ deviceId: String, belongsTo appId: String) -> Bool {
        (Self.appId(ofDevice: deviceId).map(String.init) ?? defaultId) == appId
    }

    /// The id of a device of `appId` whose own part is `base` (`dev_…`).
    public static func deviceId(app appId: String, base: String) -> String {
        appId == defaultId ? base : appId + ":" + base
    }

    /// 1 to 32 of `a-z`, `0-9` and `-`, starting with a letter or digit.
    public static func isAppId(_ id: String) -> Bool {
        let bytes = Array(id.utf8)
        guard (1...32).contains(bytes.count), bytes[0] != UInt8(ascii: "-") else { return false }
        return bytes.allSatisfy { (97...122).contains($0) || (48...57).contains($0) || $0 == UInt8(ascii: "-") }
    }
}
