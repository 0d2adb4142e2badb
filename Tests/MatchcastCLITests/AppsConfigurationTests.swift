import Foundation
@testable import MatchcastCLI
import MatchcastCore
import MatchcastTesting
import Testing

private enum AppsYAML {
    /// A serve configuration with the apns sink (the loader checks its settings; the key file is read by the sink
    /// only), an admin key and a default app of its own bundle id, and `apps` appended as written.
    static func serve(apps: String, top: String = "") -> String {
        """
        sinks: [apns]
        bundleId: com.example.scores
        adminKey: deployment-secret
        apns:
          keyFile: /etc/matchcast/AuthKey_ABC123DEFG.p8
          keyId: ABC123DEFG
          teamId: DEF123GHIJ
          environment: production
          maxConnections: 3
        \(top)
        \(apps)
        """
    }

    static let twoApps = """
        apps:
          - id: fantasy
            bundleId: com.example.fantasy
            adminKey: fantasy-secret
          - id: kids
            bundleId: com.example.kids
            apns:
              keyFile: /etc/matchcast/AuthKey_KIDS123456.p8
              keyId: KIDS123456
              environment: sandbox
        """

    static func load(
        _ text: String, environment: [String: String] = [:], flags: [String: String] = [:]
    ) throws(ConfigurationError) -> BrokerConfiguration {
        try ConfigurationLoader.load(fileText: text, environment: environment, flags: flags, serving: true)
    }

    /// The error loading `text` gives.
    static func error(_ text: String, environment: [String: String] = [:]) throws -> ConfigurationError {
        try #require(throws: ConfigurationError.self) { try load(text, environment: environment) }
    }
}

/// The `apps:` list of `serve`'s file: each app takes every sink setting it does not set from the top level, but never
/// the top level's bundle id, APNs topic or admin key; an app's admin key may come from its own variable; every
/// mistake is refused naming its key; `follow` and `replay` (which read the sink keys only) ignore the list; and a
/// file without apps loads as it always did.
@Suite("serve configuration: the apps list")
struct AppsConfigurationTests {
    fileprivate typealias Y = AppsYAML

    @Test("an app takes the top level's unset sink settings; its bundle id is its own, the top level's admin key is not")
    func inheritance() throws {
        let config = try Y.load(Y.serve(apps: Y.twoApps))
        #expect(config.apps.map(\.id) == ["fantasy", "kids"])
        let fantasy = config.apps[0], kids = config.apps[1]

        // fantasy sets nothing of APNs: all of it is the top level's.
        #expect(fantasy.settings.apns.keyFile == "/etc/matchcast/AuthKey_ABC123DEFG.p8")
        #expect(fantasy.settings.apns.keyId == "ABC123DEFG" && fantasy.settings.apns.teamId == "DEF123GHIJ")
        #expect(fantasy.settings.apns.environment == .production && fantasy.settings.apns.maxConnections == 3)
        #expect(fantasy.settings.sinks == ["apns"])
        // kids sets its key and environment; the team id and the rest stay the top level's.
        #expect(kids.settings.apns.keyFile == "/etc/matchcast/AuthKey_KIDS123456.p8")
        #expect(kids.settings.apns.keyId == "KIDS123456")
        #expect(kids.settings.apns.environment == .sandbox)
        #expect(kids.settings.apns.teamId == "DEF123GHIJ" && kids.settings.apns.maxConnections == 3)

        // Their identity is their own.
        #expect(fantasy.settings.bundleId == "com.example.fantasy" && kids.settings.bundleId == "com.example.kids")
        #expect(fantasy.catalogEntry == AppCatalog.App(id: "fantasy", bundleId: "com.example.fantasy"))
        #expect(kids.catalogEntry.topic == "com.example.kids.push-type.liveactivity")
        #expect(fantasy.adminKey == "fantasy-secret")
        #expect(kids.adminKey == "", "the deployment's admin key is not an app's")
        #expect(fantasy.settings.adminKey == "" && kids.settings.adminKey == "")
        #expect(fantasy.settings.apps.isEmpty && kids.settings.apps.isEmpty)

        // The top level is the default app's, untouched.
        #expect(config.bundleId == "com.example.scores" && config.adminKey == "deployment-secret")
        #expect(config.apns.keyId == "ABC123DEFG" && config.apns.environment == .production)
    }

    @Test("the top level's APNs topic is the default app's: an app without one takes its bundle id; an app may give its topic")
    func topicNotInherited() throws {
        let apps = """
            apps:
              - id: fantasy
                bundleId: com.example.fantasy
              - id: kids
                apns:
                  topic: com.example.kids.push-type.liveactivity
            """
        let config = try Y.load(Y.serve(apps: apps), flags: ["apns.topic": "com.example.scores-live"])
        #expect(config.topicBundleId == "com.example.scores-live")
        #expect(config.apps[0].settings.apns.topic == "")
        #expect(config.apps[0].catalogEntry.bundleId == "com.example.fantasy")
        #expect(config.apps[1].catalogEntry.bundleId == "com.example.kids", "a topic given whole names its bundle id")
        #expect(config.apps[1].catalogEntry.topic == "com.example.kids.push-type.liveactivity")
    }

    @Test("the top level's environment and flags are what the apps inherit; an app's own setting still wins")
    func inheritsAfterEnvironmentAndFlags() throws {
        let config = try Y.load(
            Y.serve(apps: Y.twoApps),
            environment: ["MATCHCAST_APNS_TEAM_ID": "ENV123TEAM"],
            flags: ["apns.keyFile": "/run/secrets/AuthKey.p8"])
        #expect(config.apps[0].settings.apns.teamId == "ENV123TEAM")
        #expect(config.apps[0].settings.apns.keyFile == "/run/secrets/AuthKey.p8")
        #expect(config.apps[1].settings.apns.keyFile == "/etc/matchcast/AuthKey_KIDS123456.p8", "its own key file")
    }

    @Test("an app's admin key from MATCHCAST_APP_<ID>_ADMIN_KEY, over its file's; - in the id is _")
    func adminKeyFromEnvironment() throws {
        #expect(AppConfiguration.adminKeyVariable(appId: "fantasy") == "MATCHCAST_APP_FANTASY_ADMIN_KEY")
        #expect(AppConfiguration.adminKeyVariable(appId: "my-app-2") == "MATCHCAST_APP_MY_APP_2_ADMIN_KEY")
        let apps = Y.twoApps + "\n  - id: my-app-2\n    bundleId: com.example.mine\n"
        let config = try Y.load(Y.serve(apps: apps), environment: [
            "MATCHCAST_APP_FANTASY_ADMIN_KEY": "fantasy-from-env",
            "MATCHCAST_APP_MY_APP_2_ADMIN_KEY": "mine-from-env",
            "MATCHCAST_APP_OTHER_ADMIN_KEY": "nobody's",
        ])
        #expect(config.apps.map(\.adminKey) == ["fantasy-from-env", "", "mine-from-env"])
        #expect(config.adminKey == "deployment-secret")
    }

    @Test("FCM and Web Push settings are inherited too, and an app may set its own")
    func otherServices() throws {
        let text = """
            sinks: [fcm, webpush]
            bundleId: com.example.scores
            fcm:
              serviceAccountFile: /etc/matchcast/firebase.json
              endpoint: https://fcm.example
            webpush:
              vapidKeyFile: /etc/matchcast/vapid.pem
              vapidSubject: mailto:ops@example.com
            apps:
              - id: fantasy
                bundleId: com.example.fantasy
                fcm:
                  serviceAccountFile: /etc/matchcast/fantasy-firebase.json
                webpush:
                  vapidSubject: mailto:fantasy@example.com
            """
        let config = try Y.load(text)
        let fantasy = try #require(config.apps.first).settings
        #expect(fantasy.fcm.serviceAccountFile == "/etc/matchcast/fantasy-firebase.json")
        #expect(fantasy.fcm.endpoint == "https://fcm.example")
        #expect(fantasy.webPush.vapidKeyFile == "/etc/matchcast/vapid.pem")
        #expect(fantasy.webPush.vapidSubject == "mailto:fantasy@example.com")
        #expect(config.fcm.serviceAccountFile == "/etc/matchcast/firebase.json")
        #expect(config.webPush.vapidSubject == "mailto:ops@example.com")
    }

    @Test("without apps (none, an empty list, or null) a file loads as before; with apps the top level is unchanged")
    func withoutApps() throws {
        let plain = try Y.load(Y.serve(apps: ""))
        #expect(plain.apps.isEmpty)
        #expect(try Y.load(Y.serve(apps: "apps: []")) == plain)
        #expect(try Y.load(Y.serve(apps: "apps:")) == plain)
        var withApps = try Y.load(Y.serve(apps: Y.twoApps))
        #expect(!withApps.apps.isEmpty)
        withApps.apps = []
        #expect(withApps == plain, "apps change nothing at the top level")
        #expect(try ConfigurationLoader.load(fileText: nil, environment: [:], flags: [:], serving: true).apps.isEmpty)
    }

    @Test("follow and replay read the sink keys only: the apps list is ignored, even a wrong one")
    func onlySinkKeysIgnoreApps() throws {
        for apps in [Y.twoApps, "apps:\n  - id: default\n    bundleId: com.example.scores\n", "apps: fantasy"] {
            let config = try ConfigurationLoader.load(
                fileText: Y.serve(apps: apps), environment: [:], flags: [:], only: ConfigurationKey.isSinkKey)
            #expect(config.apps.isEmpty, "\(apps)")
            #expect(config.apns.keyId == "ABC123DEFG" && config.bundleId == "com.example.scores")
        }
        let folder = try ScratchFolder.newFolder("apps-config")
        defer { try? FileManager.default.removeItem(at: folder) }
        let file = folder.appendingPathComponent("apps.yaml")
        try Data(Y.serve(apps: Y.twoApps).utf8).write(to: file)
        for command in ["follow", "replay"] {
            let config = try SinkOptionsTests.configuration(command, ["--config", file.path])
            #expect(config.apps.isEmpty, "\(command)")
            #expect(config.sinks == ["apns"] && config.apns.keyFile == "/etc/matchcast/AuthKey_ABC123DEFG.p8")
        }
        // serve, from the same file, has them.
        #expect(try ServeCommand.parse(["--config", file.path]).loadConfiguration(environment: [:]).apps.map(\.id) == ["fantasy", "kids"])
    }

    @Test("each mistake is refused in one line naming its key", arguments: [
        ("apps:\n  - id: fantasy\n    bundleId: com.example.fantasy\n  - id: fantasy\n    bundleId: com.example.other\n",
         "apps", "app 'fantasy' is given twice"),
        ("apps:\n  - id: fantasy\n    bundleId: com.example.fantasy\n  - id: twin\n    bundleId: com.example.fantasy\n",
         "apps", "apps 'fantasy' and 'twin' have the same bundle id com.example.fantasy"),
        ("apps:\n  - id: copy\n    bundleId: com.example.scores\n",
         "apps", "apps 'default' and 'copy' have the same bundle id com.example.scores"),
        ("apps:\n  - id: copy\n    apns:\n      topic: com.example.scores.push-type.liveactivity\n",
         "apps", "apps 'default' and 'copy' have the same bundle id"),
        ("apps:\n  - id: default\n    bundleId: com.example.other\n", "apps[0].id", "'default' is the app configured at the top level"),
        ("apps:\n  - id: fantasy\n    bundleId: com.example.fantasy\n  - id: Kids\n    bundleId: com.example.kids\n",
         "apps[1].id", "'Kids' is not 1 to 32 lower-case letters"),
        ("apps:\n  - id: \"kids:2\"\n    bundleId: com.example.kids\n", "apps[0].id", "is not 1 to 32"),
        ("apps:\n  - bundleId: com.example.kids\n", "apps[0].id", "each app needs an id"),
        ("apps:\n  - id: \"  \"\n    bundleId: com.example.kids\n", "apps[0].id", "each app needs an id"),
        ("apps:\n  - id: kids\n    bundleId: com.example.kids\n    http:\n      port: 9000\n", "apps.kids.http.port", "not a key an app sets"),
        ("apps:\n  - id: kids\n    bundleId: com.example.kids\n    feed: nhl\n", "apps.kids.feed", "not a key an app sets"),
        ("apps:\n  - id: kids\n    bundleId: com.example.kids\n    fcm:\n      registrationToken: abc\n",
         "apps.kids.fcm.registrationToken", "not a key an app sets"),
        ("apps:\n  - id: kids\n    bundleId: com.example.kids\n    apns:\n      channelsEndpoint: https://127.0.0.1:1\n",
         "apps.kids.apns.channelsEndpoint", "not a key an app sets"),
        ("apps:\n  - id: kids\n    bundleId: com.example.kids\n    apns:\n      keyFle: k.p8\n", "apps.kids.apns.keyFle", "not a key an app sets"),
        ("apps:\n  - id: kids\n    apns:\n      keyId: KIDS123456\n", "apps.kids.bundleId", "each app needs its bundle id"),
        ("apps:\n  - id: kids\n    bundleId: \"\"\n", "apps.kids.bundleId", "must not be empty"),
        ("apps:\n  - id: kids\n    bundleId: com.example.kids\n    apns:\n      environment: staging\n",
         "apps.kids.apns.environment", "is not sandbox or production"),
        ("apps:\n  - id: kids\n    bundleId: com.example.kids\n    apns:\n      keyId: \"AB C\"\n",
         "apps.kids.apns.keyId", "is not 10 ASCII letters and digits"),
        ("apps:\n  - id: kids\n    bundleId: com.example.kids\n    apns:\n      keyFile: \"\"\n",
         "apps.kids.apns.keyFile", "the apns sink needs the .p8 signing key file"),
        ("apps:\n  - id: kids\n    bundleId: com.example.kids\n    apns:\n      maxConnections: 0\n",
         "apps.kids.apns.maxConnections", "is not a whole number in 1...64"),
        ("apps: fantasy\n", "apps", "expected a list of apps"),
        ("apps:\n  fantasy:\n    bundleId: com.example.fantasy\n", "apps", "expected a list of apps"),
        ("apps:\n  - fantasy\n", "apps[0]", "expected a mapping"),
    ])
    func refused(apps: String, key: String, reason: String) throws {
        let error = try Y.error(Y.serve(apps: apps))
        #expect(error.key == key, "\(error)")
        #expect(error.reason.contains(reason), "\(error)")
        #expect(!error.description.contains("\n"))
    }

    @Test("broadcast channels serve one app: refused with apps, naming broadcast.minFollowers")
    func broadcastWithApps() throws {
        let error = try Y.error(Y.serve(apps: Y.twoApps, top: "broadcast:\n  minFollowers: 5\n"))
        #expect(error.key == "broadcast.minFollowers")
        #expect(error.reason.contains("with apps configured"), "\(error)")
        // Without apps the same setting loads.
        #expect(try Y.load(Y.serve(apps: "", top: "broadcast:\n  minFollowers: 5\n")).broadcastMinFollowers == 5)
        // And with apps at 0 it loads.
        #expect(try Y.load(Y.serve(apps: Y.twoApps, top: "broadcast:\n  minFollowers: 0\n")).apps.count == 2)
    }

    @Test("an app's FCM settings are checked as the top level's are: serve refuses one device's token, requires a file")
    func appSinkSettingsChecked() throws {
        let text = """
            sinks: [fcm]
            bundleId: com.example.scores
            fcm:
              serviceAccountFile: /etc/matchcast/firebase.json
            apps:
              - id: fantasy
                bundleId: com.example.fantasy
                fcm:
                  serviceAccountFile: ""
            """
        let error = try Y.error(text)
        #expect(error.key == "apps.fantasy.fcm.serviceAccountFile", "\(error)")
        #expect(error.reason.contains("the fcm sink needs"))
    }

    @Test("the keys an app may set are sink settings that exist at the top level")
    func appKeysExist() {
        let known = Set(ConfigurationKey.all.map(\.path))
        #expect(AppConfiguration.keys.isSubset(of: known), "\(AppConfiguration.keys.subtracting(known))")
        #expect(AppConfiguration.keys.allSatisfy(ConfigurationKey.isSinkKey))
        for key in ["adminKey", "fcm.registrationToken", "webpush.subscriptionFile", "apns.channelsEndpoint", "sinks", "webhook.url"] {
            #expect(!AppConfiguration.keys.contains(key), "\(key)")
        }
    }
}
