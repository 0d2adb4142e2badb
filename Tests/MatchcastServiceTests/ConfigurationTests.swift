import Foundation
@testable import MatchcastCLI
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

    @Test("an invalid value is one line naming the key", arguments: [
        ("http:\n  port: 99999\n", [String: String](), "http.port"),
        ("polling:\n  minPollMs: 5000\n  maxPollMs: 1000\n", [:], "polling.minPollMs"),
        ("log:\n  format: xml\n", [:], "log.format"),
        ("htp:\n  port: 1\n", [:], "htp.port"),
        ("sinks: [carrier-pigeon]\n", [:], "sinks"),
        ("sinks: [\"webhook:https://x.example\"]\n", [:], "webhook.secret"),
        ("http: [1, 2\n", [:], "(file)"),
        ("", ["MATCHCAST_ACTIVITIES_DISMISSAL_SECONDS": "99999"], "activities.dismissalSeconds"),
    ])
    func invalid(file: String, environment: [String: String], key: String) {
        #expect {
            _ = try ConfigurationLoader.load(fileText: file, environment: environment, flags: [:])
        } throws: { error in
            guard let error = error as? ConfigurationError else { return false }
            return error.key == key && !error.description.contains("\n") && error.description.contains(key)
        }
    }
}
