import ArgumentParser
import Hummingbird
import Logging
import MatchcastFeeds

/// `matchcast fake-feed`: serves the deterministic simulated matches over the native v1 feed API.
struct FakeFeedCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "fake-feed",
        abstract: "Serve simulated matches over HTTP with the native v1 feed API.",
        discussion: """
            Serves GET /live-matches, /matches/{id} and /schedule?date=YYYY-MM-DD for the scenarios \
            \(FakeFeed.scenarioNames.joined(separator: ", ")), seeded and deterministic, answering \
            retryAfterMs, ETag and 304 like a real backend. --speed runs simulated time faster.

            Example:
              matchcast fake-feed --port 8090 --speed 600 &
              matchcast follow cricket-t20 --feed http://127.0.0.1:8090
            """
    )

    @Option(help: "Port to listen on (0 picks a free one).")
    var port: Int = 8090

    @Option(help: "Address to listen on.")
    var host = "127.0.0.1"

    @Option(help: "Simulated seconds per real second.")
    var speed: Double = 1

    @Option(help: "Seed of the simulation.")
    var seed: UInt64 = 1

    func validate() throws {
        guard (0...65535).contains(port) else { throw ValidationError("--port must be 0...65535") }
        guard speed > 0, speed <= 100_000 else { throw ValidationError("--speed must be in (0, 100000]") }
    }

    func run() async throws {
        let feed: FakeFeed
        do {
            feed = try FakeFeed(seed: seed, speed: speed)
        } catch {
            throw ValidationError("\(error)")
        }
        var logger = Logger(label: "matchcast.fake-feed")
        logger.logLevel = .info
        let app = FakeFeedServer.makeApplication(feed: feed, host: host, port: port, logger: logger)
        try await app.runService()
    }
}
