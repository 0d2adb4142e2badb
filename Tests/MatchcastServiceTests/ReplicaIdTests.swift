import AsyncHTTPClient
import Foundation
import Testing

/// Two `matchcast serve` processes configured with one `--replica-id` would each take the other's leases for their
/// own and run the same matches twice. The second is refused at start; a clean stop frees the id at once.
@Suite(.enabled(if: ScratchPostgresDatabase.isConfigured, ScratchPostgresDatabase.skipMessage), .serialized)
struct ReplicaIdTests {
    @Test("a second serve with a replica id in use exits 2 and says why; after a clean stop the id is free at once",
          .timeLimit(.minutes(5)))
    func duplicateReplicaIdIsRefused() async throws {
        let binary = try #require(MatchcastProcess.binary, "the matchcast executable is not built beside the tests")
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("matchcast-replica-id-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let database = try await ScratchPostgresDatabase.create()
        let client = HTTPClient(eventLoopGroupProvider: .singleton)
        let arguments = ["--store", database.url, "--lease-ttl", "2"]
        var started: [BrokerReplica] = []
        do {
            let first = try await BrokerReplica.start(binary, name: "first", replicaId: "web-1", arguments: arguments, client: client, log: directory)
            started.append(first)
            try await first.waitUntilHealthy()

            // The same id again, while the first runs: refused once a lease TTL has shown the first is alive.
            let second = try await BrokerReplica.start(binary, name: "second", replicaId: "web-1", arguments: arguments, client: client, log: directory)
            started.append(second)
            let exited = try await eventually(within: 30) { !second.process.isRunning }
            #expect(exited, "the second process is still running")
            #expect(second.process.exitStatus == 2)
            let log = (try? String(contentsOf: directory.appendingPathComponent("second.log"), encoding: .utf8)) ?? ""
            #expect(log.contains("replica id 'web-1' is in use by another running matchcast"))
            #expect(first.process.isRunning, "the first one runs on")

            // The first stops cleanly: a new process takes the id without waiting out the TTL.
            await first.stop()
            let third = try await BrokerReplica.start(binary, name: "third", replicaId: "web-1", arguments: arguments, client: client, log: directory)
            started.append(third)
            try await third.waitUntilHealthy()
        } catch {
            print(MatchcastProcess.logs(directory))
            for replica in started { await replica.stop() }
            try? await client.shutdown()
            try? await database.drop()
            throw error
        }
        for replica in started { await replica.stop() }
        try await client.shutdown()
        try await database.drop()
    }
}
