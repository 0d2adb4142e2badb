import AsyncHTTPClient
import Foundation
import MatchcastCore
import MatchcastTesting
import Testing

/// One `matchcast serve` replica of several sharing a store: its process, its API, the webhook receiver only it
/// sends to (so every delivery says which replica sent it), and its JSON log lines (`--log-format json`).
final class BrokerReplica: Sendable {
    /// One JSON log line of the broker.
    struct LogLine: Sendable {
        var time: Date
        var message: String
        var fields: [String: String]
    }

    let name: String
    let api: BrokerAPI
    let receiver: WebhookReceiver
    let process: MatchcastProcess
    private let logURL: URL

    private init(name: String, api: BrokerAPI, receiver: WebhookReceiver, process: MatchcastProcess, logURL: URL) {
        self.name = name
        self.api = api
        self.receiver = receiver
        self.process = process
        self.logURL = logURL
    }

    /// Starts `serve` with `arguments` plus its own port, replica id and webhook sink, logging JSON to
    /// `directory/<name>.log`.
    static func start(
        _ binary: URL, name: String, arguments: [String], client: HTTPClient, log directory: URL
    ) async throws -> BrokerReplica {
        let receiver = try await WebhookReceiver.start(secret: WebhookFixture.secret)
        do {
            let port = try MatchcastProcess.freePort()
            let process = try MatchcastProcess.start(
                binary,
                ["serve"] + arguments + [
                    "--port", "\(port)", "--replica-id", name, "--sink", "webhook:" + receiver.url,
                    "--webhook-secret", WebhookFixture.secretText, "--log-format", "json", "--log-level", "info",
                ],
                log: directory, name: name)
            return BrokerReplica(
                name: name, api: BrokerAPI(client: client, port: port), receiver: receiver, process: process,
                logURL: directory.appendingPathComponent("\(name).log"))
        } catch {
            await receiver.stop()
            throw error
        }
    }

    /// Waits until `/healthz` answers; fails at once when the process has exited (a bad flag, no database).
    func waitUntilHealthy() async throws {
        var healthy = false
        _ = try await eventually(within: 120, every: .milliseconds(50)) {
            healthy = (try? await api.call(.GET, "/healthz"))?.0 == 200
            return healthy || !process.isRunning
        }
        try #require(process.isRunning, "\(name) exited before it answered /healthz")
        try #require(healthy, "\(name) answered /healthz")
    }

    /// Every JSON line logged so far (a half-written last line is left for the next read).
    var logLines: [LogLine] {
        guard let text = try? String(contentsOf: logURL, encoding: .utf8) else { return [] }
        let format = Date.ISO8601FormatStyle(includingFractionalSeconds: true)
        return text.split(separator: "\n").compactMap { line in
            guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                let message = object["message"] as? String, let stamp = object["time"] as? String,
                let time = try? format.parse(stamp)
            else { return nil }
            return LogLine(time: time, message: message, fields: object.compactMapValues { $0 as? String })
        }
    }

    /// When this replica last logged that it holds `match`'s lease (acquired or taken over), if it ever did.
    func leaseTaken(of match: String) -> LogLine? {
        logLines.last { ["match lease acquired", "match taken over"].contains($0.message) && $0.fields["match"] == match }
    }

    /// The sum of every series of a counter on `/metrics` whose labels include `label`.
    func metric(_ name: String, label: String) async throws -> Double {
        let (status, body) = try await api.call(.GET, "/metrics")
        guard status == 200 else { return 0 }
        return String(decoding: body, as: UTF8.self).split(separator: "\n").reduce(0) { sum, line in
            guard line.hasPrefix(name + "{"), line.contains(label), let value = line.split(separator: " ").last.flatMap({ Double($0) })
            else { return sum }
            return sum + value
        }
    }

    /// Stops the process (SIGTERM, if still running) and the receiver.
    func stop() async {
        await process.stop()
        await receiver.stop()
    }
}
