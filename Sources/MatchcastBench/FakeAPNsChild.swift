import ArgumentParser
import Crypto
import Foundation
import MatchcastTesting

/// Where `bench serve` has serve deliver.
enum ServeBenchSink: String, ExpressibleByArgument, Sendable {
    /// serve's stdout NDJSON, piped to the benchmark.
    case stdout
    /// APNs: `matchcast-fake-apns` (swift-nio-http2's server side, not the project's HTTP/2 code), which reports
    /// each 200 answer on its stdout.
    case apns
}

/// `matchcast-fake-apns` as a child of `bench serve`: a throwaway CA and server certificate, a signing key for
/// serve, the fake started with `--report` (its stdout, one line per 200 answer, goes to a `DeliveryTap`).
enum FakeAPNsChild {
    static let keyId = "BENCHKEY01"
    static let teamId = "BENCHTEAM1"
    static let topic = "com.example.matchcast.bench"

    /// Starts the fake and returns it with the sink flags serve needs to send to it.
    static func start(
        executable: String, directory: URL, maxConnections: Int?, timeout: Duration
    ) async throws -> (ServeChild, [String]) {
        guard FileManager.default.isExecutableFile(atPath: executable) else {
            throw BenchSetupError("--sink apns needs matchcast-fake-apns at \(executable) "
                + "(swift build -c release, or --fake-apns PATH)")
        }
        let certificates = try TestCertificates.make()
        let file = { (name: String, text: String) throws -> String in
            let url = directory.appendingPathComponent(name)
            try Data(text.utf8).write(to: url)
            return url.path
        }
        let certificate = try file("fake-apns-cert.pem", certificates.serverCertificatePEM)
        let certificateKey = try file("fake-apns-key.pem", certificates.serverKeyPEM)
        let caFile = try file("fake-apns-ca.pem", certificates.caPEM)
        let signingKey = try file("apns-signing.p8", P256.Signing.PrivateKey().pemRepresentation)
        let ready = directory.appendingPathComponent("fake-apns.port").path
        let child = try ServeChild.start(
            executable: executable,
            arguments: ["--cert", certificate, "--key", certificateKey, "--ready-file", ready, "--report"],
            environment: [:], directory: directory, logName: "fake-apns.log", tap: DeliveryTap())
        let deadline = ContinuousClock.now + min(timeout, .seconds(30))
        var port: Int?
        while port == nil {
            port = (try? String(contentsOfFile: ready, encoding: .utf8)).flatMap { Int($0.trimmingCharacters(in: .whitespacesAndNewlines)) }
            if port != nil { break }
            guard child.isRunning, ContinuousClock.now < deadline else {
                await child.stop()
                throw BenchSetupError("matchcast-fake-apns did not start: " + child.logTail())
            }
            try await Task.sleep(for: .milliseconds(10))
        }
        var flags = [
            "--sink", "apns", "--apns-key-file", signingKey, "--apns-key-id", keyId, "--apns-team-id", teamId,
            "--apns-topic", topic, "--apns-environment", "production", "--apns-endpoint", "https://127.0.0.1:\(port!)",
            "--apns-ca-file", caFile,
        ]
        if let maxConnections { flags += ["--apns-max-connections", "\(maxConnections)"] }
        return (child, flags)
    }
}
