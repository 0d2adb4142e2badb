import Foundation
@testable import MatchcastCLI
import MatchcastFeeds
import Testing

@Suite("serve configuration: file, environment, flags")
struct ConfigurationTests {
    static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent()

    @Test("Config/matchcast.yaml states exactly the compiled-in defaults")
    func defaultFileMatchesDefaults() throws {
        let text = try String(contentsOf: Self.repository.appendingPathComponent("Config/matchcast.yaml"), encoding: .utf8)
        let fromFile = try ConfigurationLoader.load(fileText: text, environment: [:], flags: [:])
        #expect(fromFile == BrokerConfiguration())
        // Every key the loader knows is documented in the file, and nothing else is.
        let documented = Set(try ConfigurationLoader.flatten(yaml: text).keys)
        #expect(documented == Set(ConfigurationKey.all.map(\.path)))
    }

    @Test("file < environment < flags")
    func precedence() throws {
        let file = "http:\n  port: 9000\nfeed: http://feed.example/v1\nsinks: [stdout]\n"
        let config = try ConfigurationLoader.load(
            fileText: file,
            environment: ["MATCHCAST_HTTP_PORT": "9100", "MATCHCAST_POLLING_MIN_POLL_MS": "500", "UNRELATED": "x"],
            flags: ["http.port": "9200"])
        #expect(config.port == 9200)
        #expect(config.minPollMs == 500)
        #expect(config.feed == "http://feed.example/v1")
        #expect(config.store == BrokerConfiguration().store)
    }

    @Test("a switch: YAML's booleans, and true/false, 1/0, yes/no, on/off in the environment")
    func switches() throws {
        #expect(try ConfigurationLoader.load(fileText: nil, environment: [:], flags: [:]).liveListServesMatches == false)
        let file = try ConfigurationLoader.load(fileText: "polling:\n  liveListServesMatches: true\n", environment: [:], flags: [:])
        #expect(file.liveListServesMatches)
        for (value, expected) in [("true", true), ("ON", true), ("1", true), ("yes", true), ("false", false), ("off", false), ("0", false), ("No", false)] {
            let config = try ConfigurationLoader.load(
                fileText: "polling:\n  liveListServesMatches: \(!expected)\n",
                environment: ["MATCHCAST_POLLING_LIVE_LIST_SERVES_MATCHES": value], flags: [:])
            #expect(config.liveListServesMatches == expected, "\(value)")
        }
    }

    @Test("environment names follow the key paths")
    func environmentNames() {
        let names = Dictionary(uniqueKeysWithValues: ConfigurationKey.all.map { ($0.path, $0.environmentName) })
        #expect(names["http.port"] == "MATCHCAST_HTTP_PORT")
        #expect(names["adminKey"] == "MATCHCAST_ADMIN_KEY")
        #expect(names["polling.minPollMs"] == "MATCHCAST_POLLING_MIN_POLL_MS")
        #expect(names["activities.pushToStartSpacingSeconds"] == "MATCHCAST_ACTIVITIES_PUSH_TO_START_SPACING_SECONDS")
    }

    @Test("several sinks from a list or a comma-separated value")
    func sinks() throws {
        let config = try ConfigurationLoader.load(
            fileText: nil, environment: ["MATCHCAST_WEBHOOK_SECRET": "whsec_AAAA"],
            flags: ["sinks": "stdout, webhook:https://push.example/hook"])
        #expect(config.sinks == ["stdout", "webhook:https://push.example/hook"])
    }

    @Test("several feeds from a YAML list, a comma-separated variable, or --feed given more than once")
    func severalFeeds() throws {
        let file = try ConfigurationLoader.load(fileText: "feed: [espn:soccer/eng.1, nhl]\n", environment: [:], flags: [:])
        #expect(try FeedSpec.list(parsing: file.feed) == [try FeedSpec(parsing: "espn:soccer/eng.1"), try FeedSpec(parsing: "nhl")])
        let environment = try ConfigurationLoader.load(fileText: nil, environment: ["MATCHCAST_FEED": "mlb,nhl"], flags: [:])
        #expect(try FeedSpec.list(parsing: environment.feed).map(\.publicName) == ["mlb", "nhl"])
        let command = try ServeCommand.parse(["--feed", "espn:basketball/nba", "--feed", "http://127.0.0.1:8090"])
        let flags = try command.loadConfiguration(environment: ["MATCHCAST_FEED": "mlb"])
        #expect(try FeedSpec.list(parsing: flags.feed).map(\.publicName) == ["espn:basketball/nba", "http://127.0.0.1:8090"])
        #expect(try FeedSpec.list(parsing: try ServeCommand.parse([]).loadConfiguration(environment: [:]).feed).map(\.publicName) == ["fake"])
    }

    /// Every `apns` key with a value unlike its default, by key path.
    static let apnsValues: [String: String] = [
        "apns.keyFile": "/etc/matchcast/AuthKey_ABC123DEFG.p8",
        "apns.keyId": "ABC123DEFG",
        "apns.teamId": "DEF123GHIJ",
        "apns.topic": "com.example.scores",
        "apns.environment": "sandbox",
        "apns.endpoint": "https://127.0.0.1:8443",
        "apns.caFile": "/tmp/fake-apns-ca.pem",
        "apns.maxConcurrentRequests": "7",
    ]

    static func expectAPNsValues(_ config: BrokerConfiguration) {
        #expect(config.apns.keyFile == "/etc/matchcast/AuthKey_ABC123DEFG.p8")
        #expect(config.apns.keyId == "ABC123DEFG")
        #expect(config.apns.teamId == "DEF123GHIJ")
        #expect(config.apns.topic == "com.example.scores")
        #expect(config.apns.environment == .sandbox)
        #expect(config.apns.endpoint == "https://127.0.0.1:8443")
        #expect(config.apns.caFile == "/tmp/fake-apns-ca.pem")
        #expect(config.apns.maxConcurrentRequests == 7)
        #expect(config.sinks == ["apns", "stdout"])
        #expect(config.topicBundleId == "com.example.scores")
    }

    @Test("every apns key from the file")
    func apnsFromFile() throws {
        var yaml = "sinks: [apns, stdout]\napns:\n"
        for (path, value) in Self.apnsValues.sorted(by: { $0.key < $1.key }) {
            yaml += "  \(path.dropFirst("apns.".count)): \"\(value)\"\n"
        }
        Self.expectAPNsValues(try ConfigurationLoader.load(fileText: yaml, environment: [:], flags: [:]))
    }

    @Test("every apns key from the environment")
    func apnsFromEnvironment() throws {
        let keys = Dictionary(uniqueKeysWithValues: ConfigurationKey.all.map { ($0.path, $0.environmentName) })
        var environment = ["MATCHCAST_SINKS": "apns,stdout"]
        for (path, value) in Self.apnsValues { environment[try #require(keys[path])] = value }
        #expect(environment["MATCHCAST_APNS_KEY_FILE"] != nil && environment["MATCHCAST_APNS_CA_FILE"] != nil)
        #expect(environment["MATCHCAST_APNS_MAX_CONCURRENT_REQUESTS"] == "7")
        Self.expectAPNsValues(try ConfigurationLoader.load(fileText: nil, environment: environment, flags: [:]))
    }

    @Test("every apns key from serve's flags, over file and environment")
    func apnsFromFlags() throws {
        let command = try ServeCommand.parse([
            "--sink", "apns", "--sink", "stdout",
            "--apns-key-file", "/etc/matchcast/AuthKey_ABC123DEFG.p8", "--apns-key-id", "ABC123DEFG",
            "--apns-team-id", "DEF123GHIJ", "--apns-topic", "com.example.scores", "--apns-environment", "sandbox",
            "--apns-endpoint", "https://127.0.0.1:8443", "--apns-ca-file", "/tmp/fake-apns-ca.pem",
            "--apns-max-concurrent-requests", "7",
        ])
        // The environment loses to every flag.
        let environment = [
            "MATCHCAST_SINKS": "stdout", "MATCHCAST_APNS_KEY_ID": "ZZZ999ZZZZ", "MATCHCAST_APNS_ENVIRONMENT": "production",
            "MATCHCAST_APNS_MAX_CONCURRENT_REQUESTS": "50",
        ]
        Self.expectAPNsValues(try command.loadConfiguration(environment: environment))
    }

    @Test("apns defaults: production, Apple's endpoint, system roots, the topic is the bundle id")
    func apnsDefaults() throws {
        let config = try ConfigurationLoader.load(fileText: nil, environment: ["MATCHCAST_BUNDLE_ID": "com.example.app"], flags: [:])
        #expect(config.apns.environment == .production)
        #expect(config.apns.endpoint.isEmpty && config.apns.caFile.isEmpty)
        #expect(config.topicBundleId == "com.example.app")
        // A topic given whole names the same bundle id.
        let whole = try ConfigurationLoader.load(
            fileText: nil, environment: [:], flags: ["apns.topic": "com.example.app.push-type.liveactivity"])
        #expect(whole.topicBundleId == "com.example.app")
    }

    @Test("the apns sink without its key file, key id or team id names the missing key", arguments: [
        "apns.keyFile", "apns.keyId", "apns.teamId",
    ])
    func apnsMissing(missing: String) {
        var flags = Self.apnsValues
        flags["sinks"] = "apns"
        flags[missing] = nil
        #expect {
            _ = try ConfigurationLoader.load(fileText: nil, environment: [:], flags: flags)
        } throws: { error in
            guard let error = error as? ConfigurationError else { return false }
            return error.key == missing && !error.description.contains("\n")
        }
        // Without the apns sink nothing in the section is needed.
        flags["sinks"] = "stdout"
        #expect(throws: Never.self) { try ConfigurationLoader.load(fileText: nil, environment: [:], flags: flags) }
    }

    @Test("an invalid value is one line naming the key", arguments: [
        ("http:\n  port: 99999\n", [String: String](), "http.port"),
        ("polling:\n  minPollMs: 5000\n  maxPollMs: 1000\n", [:], "polling.minPollMs"),
        ("log:\n  format: xml\n", [:], "log.format"),
        ("htp:\n  port: 1\n", [:], "htp.port"),
        ("sinks: [carrier-pigeon]\n", [:], "sinks"),
        ("sinks: [\"webhook:https://x.example\"]\n", [:], "webhook.secret"),
        ("http: [1, 2\n", [:], "(file)"),
        ("", ["MATCHCAST_ACTIVITIES_DISMISSAL_SECONDS": "99999"], "activities.dismissalSeconds"),
        ("apns:\n  environment: staging\n", [:], "apns.environment"),
        ("", ["MATCHCAST_APNS_ENDPOINT": "http://api.push.apple.com"], "apns.endpoint"),
        ("apns:\n  endpoint: https://x.example/3/device\n", [:], "apns.endpoint"),
        ("", ["MATCHCAST_APNS_MAX_CONCURRENT_REQUESTS": "0"], "apns.maxConcurrentRequests"),
        ("sinks: [apns]\napns:\n  keyFile: k.p8\n  keyId: \"AB C\"\n  teamId: T1\n", [:], "apns.keyId"),
        ("sinks: [stdout, stdout]\n", [:], "sinks"),
        ("polling:\n  liveListServesMatches: maybe\n", [:], "polling.liveListServesMatches"),
        ("", ["MATCHCAST_POLLING_LIVE_LIST_SERVES_MATCHES": "2"], "polling.liveListServesMatches"),
    ])
    func invalid(file: String, environment: [String: String], key: String) {
        #expect {
            _ = try ConfigurationLoader.load(fileText: file, environment: environment, flags: [:])
        } throws: { error in
            guard let error = error as? ConfigurationError else { return false }
            return error.key == key && !error.description.contains("\n") && error.description.contains(key)
        }
    }

    @Test("a provider group: the YAML feeds list as mappings or one-line entries, failover settings, clear errors")
    func providerGroup() throws {
        let file = """
            feeds:
              - {feed: nhl, tier: official}
              - {feed: "espn:hockey/nhl", tier: unofficial, budget: 10/min, competitions: [NHL, Stanley Cup]}
              - "http://127.0.0.1:8090;tier=scraped"
              - {feed: "espn:football/nfl", baseURL: "http://127.0.0.1:8091"}
            failover:
              coolDownSeconds: 30
              staleAfterSeconds: 0
              timeZone: America/New_York
              aliases: ["la kings=los angeles kings"]
            """
        let config = try ConfigurationLoader.load(fileText: file, environment: [:], flags: [:])
        let entries = try ProviderEntry.list(parsing: config.providers)
        #expect(entries.map(\.spec.publicName) == ["nhl", "espn:hockey/nhl", "http://127.0.0.1:8090", "espn:football/nfl@http://127.0.0.1:8091"])
        #expect(entries.map(\.tier) == [.official, .unofficial, .scraped, .unofficial])
        #expect(entries[1].budget == "10/min" && entries[1].competitions == ["NHL", "Stanley Cup"])
        // Feeds alone: the default fake feed is not polled beside them.
        #expect(config.feed.isEmpty)
        let settings = config.failover.settings
        #expect(settings.coolDown == .seconds(30) && settings.staleAfter == nil)
        #expect(settings.identity.timeZone.identifier == "America/New_York")
        #expect(settings.identity.slug("LA Kings") == "los-angeles-kings")

        let both = try ConfigurationLoader.load(fileText: file + "\nfeed: fake\n", environment: [:], flags: [:])
        #expect(both.feed == "fake")
        let flags = try ServeCommand.parse(["--provider", "nhl;tier=official", "--provider", "mlb"]).loadConfiguration(environment: [:])
        #expect(try ProviderEntry.list(parsing: flags.providers).map(\.tier) == [.official, .unofficial])

        for (bad, message) in [
            ("feeds: [{tier: official}]", "needs 'feed'"),
            ("feeds: [\"nhl;tier=gold\"]", "tier 'gold'"),
            ("feeds: [nhl, nhl]", "given twice"),
            ("failover:\n  timeZone: Mars/Olympus", "not a time zone"),
            ("failover:\n  aliases: [kings]", "alias=name"),
            ("feed: \"\"", "no feed given"),
        ] {
            #expect {
                try ConfigurationLoader.load(fileText: bad, environment: [:], flags: [:])
            } throws: { error in
                "\(error)".contains(message)
            }
        }
    }
}
