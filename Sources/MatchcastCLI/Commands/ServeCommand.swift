import ArgumentParser
import AsyncHTTPClient
import Foundation
import Logging
import MatchcastCore
import MatchcastDelivery
import MatchcastFeeds
import MatchcastHTTP
import MatchcastService
import MatchcastStore
import Metrics
import Prometheus
import ServiceLifecycle

/// `matchcast serve`: the whole broker: device API, pollers, lifecycle, delivery, persistence.
struct ServeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Run the broker: HTTP API for devices, pollers, lifecycle, delivery and persistence.",
        discussion: """
            With no options it runs on the embedded defaults (Config/matchcast.yaml): a SQLite file \
            matchcast.sqlite in the current folder, the built-in fake feed at 60x speed, deliveries \
            to stdout, the API on 127.0.0.1:8080. Every setting can come from a YAML file (--config), \
            an environment variable (MATCHCAST_HTTP_PORT, ...) or a flag, in rising precedence. \
            SIGTERM or Ctrl-C drains in-flight work, persists state and exits 0.

            Examples:
              matchcast serve
              matchcast serve --port 9000 --store sqlite:/var/lib/matchcast/db.sqlite --feed https://feed.example.com/v1
              matchcast serve --sink stdout --sink webhook:https://push.example.com/hook --webhook-secret whsec_...
              matchcast serve --sink apns --apns-key-file AuthKey_ABC123DEFG.p8 --apns-key-id ABC123DEFG \
                --apns-team-id DEF123GHIJ --apns-topic com.example.app --apns-environment sandbox \
                --sink fcm --fcm-service-account firebase-service-account.json \
                --sink webpush --vapid-key-file vapid.pem --vapid-subject mailto:ops@example.com
            """
    )

    @Option(help: "A YAML configuration file (keys as in Config/matchcast.yaml).")
    var config: String?

    @Option(help: "Address to listen on.") var host: String?
    @Option(help: "Port to listen on (0 picks a free one).") var port: Int?
    @Option(help: "sqlite:PATH, sqlite::memory: or memory.") var store: String?
    @Option(help: "A native v1 base URL, fake[?speed=N&seed=S], mlb, mlb:BASE, nhl, nhl@BASE or espn:{sport}/{league}[@BASE]; given more than once, every one is polled.")
    var feed: [String] = []
    @Option(help: "A provider of the failover group: a feed as --feed takes it, then ;tier=official|unofficial|scraped, ;budget=N/min, ;competitions=A|B; more than once for several. Its games are served under canonical ids (game:…).")
    var provider: [String] = []
    @OptionGroup(title: "Sinks (the same for follow, replay and serve)") var sinkOptions: SinkOptions
    @Option(help: "Bearer key for admin calls.") var adminKey: String?
    @Option(help: "The app's bundle id.") var bundleId: String?
    @Option(help: "Broadcast channels (iOS 18): a live match with at least N followers gets one; 0 is off.")
    var broadcastMinFollowers: Int?
    @Option(help: "This replica's name in logs and, with a nonce per process, in the lease rows (PostgreSQL store); default <host>:<pid>.") var replicaId: String?
    @Option(help: "Seconds a replica's match leases last unless renewed (PostgreSQL store).") var leaseTtl: Double?
    @Option(help: "text or json.") var logFormat: String?
    @Option(help: "trace ... critical.") var logLevel: String?

    func run() async throws {
        let configuration: BrokerConfiguration
        do {
            configuration = try loadConfiguration()
        } catch {
            StandardStreams.err("matchcast serve: " + ((error as? ConfigurationError).map(SinkOptions.message) ?? "\(error)"))
            throw ExitCode(2)
        }
        try await BrokerRunner(configuration: configuration).run()
    }

    /// Defaults < file < environment < flags.
    func loadConfiguration(environment: [String: String] = ProcessInfo.processInfo.environment) throws -> BrokerConfiguration {
        let fileText = try ConfigurationLoader.fileText(config)
        var flags: [String: String] = [:]
        flags["http.host"] = host
        flags["http.port"] = port.map(String.init)
        flags["store"] = store
        flags["feed"] = feed.isEmpty ? nil : feed.joined(separator: ",")
        flags["feeds"] = provider.isEmpty ? nil : provider.joined(separator: ",")
        flags.merge(sinkOptions.flags) { $1 }
        flags["adminKey"] = adminKey
        flags["bundleId"] = bundleId
        flags["broadcast.minFollowers"] = broadcastMinFollowers.map(String.init)
        flags["replica.id"] = replicaId
        flags["replica.leaseSeconds"] = leaseTtl.map { String($0) }
        flags["log.format"] = logFormat
        flags["log.level"] = logLevel
        let configuration = try ConfigurationLoader.load(fileText: fileText, environment: environment, flags: flags, serving: true)
        return configuration
    }
}
