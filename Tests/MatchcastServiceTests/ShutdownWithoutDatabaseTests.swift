import AsyncHTTPClient
import Foundation
import MatchcastTesting
import Testing

/// `matchcast serve` stopped with SIGTERM while its PostgreSQL is away (`Scripts/postgres pause` on a server of the
/// test's own): every store call waits for the database, so a graceful shutdown cannot finish; serve cuts it short
/// after `BrokerRunner.shutdownBound` and exits instead of running on forever.
@Suite("serve stops without its database", .serialized)
struct ShutdownWithoutDatabaseTests {
    @Test(
        "SIGTERM while PostgreSQL is away: serve gives up the stalled shutdown and exits",
        .enabled(if: ScratchPostgresDatabase.isConfigured, ScratchPostgresDatabase.skipMessage),
        .timeLimit(.minutes(5)))
    func sigtermWithoutDatabase() async throws {
        let binary = try #require(MatchcastProcess.binary, "the matchcast executable is not built beside the tests")
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("matchcast-nodb-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let cluster = URL(fileURLWithPath: "/tmp/matchcast-nodb-\(UInt32.random(in: 0...UInt32.max))")
        let url = try await PostgresScript.run("start", folder: cluster)
        defer { Task { _ = try? await PostgresScript.run("stop", folder: cluster) } }
        let port = try MatchcastProcess.freePort()
        // The built-in fake feed; a follow makes serve poll a match and use the store all the time.
        let serve = try MatchcastProcess.start(binary, ["serve", "--store", url, "--port", "\(port)"], log: directory, name: "serve")
        let client = HTTPClient(eventLoopGroupProvider: .singleton)
        defer { Task { try? await client.shutdown() } }
        let api = BrokerAPI(client: client, port: port)
        let healthy = try await eventually(within: 60, every: .milliseconds(50)) {
            (try? await api.call(.GET, "/healthz"))?.0 == 200 || !serve.isRunning
        }
        try #require(healthy && serve.isRunning, "serve answered /healthz")
        let device = try await api.register(index: 0)
        try await api.follow(device, match: "football")

        try await PostgresScript.run("pause", folder: cluster)
        try await Task.sleep(for: .seconds(2))
        let stoppedAt = ContinuousClock.now
        serve.signal(SIGTERM)
        let exited = try await eventually(within: 90, every: .milliseconds(100)) { !serve.isRunning }
        let took = ContinuousClock.now - stoppedAt
        if !exited { serve.kill() }
        #expect(exited, "serve still running \(took) after SIGTERM without its database")
        #expect(took < .seconds(45), "serve took \(took) to exit (without the bound: about a minute)")
        if !exited || took >= .seconds(45) { print(MatchcastProcess.logs(directory, lines: 300)) }
        print("shutdown-without-database: serve exited \(took) after SIGTERM, PostgreSQL away")
        _ = try? await PostgresScript.run("resume", folder: cluster)
    }
}
