import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A `matchcast` child process, its output in a log file.
public final class MatchcastProcess: @unchecked Sendable {
    private let process: Process

    private init(process: Process) {
        self.process = process
    }

    /// `matchcast` beside the test bundle (`swift build` puts both in the same folder).
    public static var binary: URL? { BuiltExecutable.named("matchcast") }

    public static func start(_ binary: URL, _ arguments: [String], log directory: URL, name: String) throws -> MatchcastProcess {
        let process = Process()
        process.executableURL = binary
        process.arguments = arguments
        process.currentDirectoryURL = directory
        let logURL = directory.appendingPathComponent("\(name).log")
        _ = FileManager.default.createFile(atPath: logURL.path, contents: nil)
        let log = try FileHandle(forWritingTo: logURL)
        process.standardOutput = FileHandle.nullDevice
        process.standardError = log
        try process.run()
        return MatchcastProcess(process: process)
    }

    /// Runs `binary` to its end without blocking a thread of the tests' pool; returns its status and output.
    public static func run(
        _ binary: URL, _ arguments: [String], environment: [String: String] = [:]
    ) async throws -> (status: Int32, stdout: String, stderr: String) {
        let process = Process()
        process.executableURL = binary
        process.arguments = arguments
        process.environment = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("MATCHCAST_") }
            .merging(environment) { _, new in new }
        // The output goes to files, not pipes: nobody reads a pipe while the child runs, so a child that printed
        // more than a pipe holds (64 KB on Linux) would block on its write and never exit.
        let folder = try ScratchFolder.newFolder("run")
        defer { try? FileManager.default.removeItem(at: folder) }
        let outURL = folder.appendingPathComponent("stdout"), errURL = folder.appendingPathComponent("stderr")
        for url in [outURL, errURL] { _ = FileManager.default.createFile(atPath: url.path, contents: nil) }
        let out = try FileHandle(forWritingTo: outURL), err = try FileHandle(forWritingTo: errURL)
        defer { try? out.close(); try? err.close() }
        process.standardOutput = out
        process.standardError = err
        process.standardInput = FileHandle.nullDevice
        let status: Int32 = try await withCheckedThrowingContinuation { continuation in
            process.terminationHandler = { continuation.resume(returning: $0.terminationStatus) }
            do { try process.run() } catch { continuation.resume(throwing: error) }
        }
        let stdout = String(decoding: try Data(contentsOf: outURL), as: UTF8.self)
        let stderr = String(decoding: try Data(contentsOf: errURL), as: UTF8.self)
        return (status, stdout, stderr)
    }

    /// Whether the process has not exited yet.
    public var isRunning: Bool { process.isRunning }

    /// SIGKILL: no handler runs, nothing is flushed.
    public func kill() {
        guard process.isRunning else { return }
        _ = Glibc.kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }

    /// Sends `number` and returns at once.
    public func signal(_ number: Int32) {
        guard process.isRunning else { return }
        _ = Glibc.kill(process.processIdentifier, number)
    }

    /// SIGTERM, then waits for the exit without holding a thread of the tests' pool: a graceful shutdown can take
    /// seconds, and `waitUntilExit()` would keep one of the pool's few threads from every other test meanwhile.
    public func stop() async {
        guard process.isRunning else { return }
        process.terminate()
        while process.isRunning { try? await Task.sleep(for: .milliseconds(10)) }
    }

    /// The last `lines` lines of every `*.log` in the folder, for a failure report.
    public static func logs(_ directory: URL, lines: Int = 40) -> String {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
        return names.filter { $0.hasSuffix(".log") }.sorted().map { name in
            let text = (try? String(contentsOf: directory.appendingPathComponent(name), encoding: .utf8)) ?? ""
            return "--- \(name)\n" + text.split(separator: "\n").suffix(lines).joined(separator: "\n")
        }.joined(separator: "\n")
    }

    /// A port nothing listens on now, for a child process to bind.
    public static func freePort() throws -> Int {
        try ReservedPort.free()
    }

    /// `serve`'s arguments for a replica on a SQLite file in `directory`, polling the feed on `feedPort` at most
    /// every 100 ms and sending to `webhook`, signed with `WebhookFixture`'s secret. The config file it names is
    /// written into `directory`, with the activity timings given.
    public static func sqliteServeArguments(
        in directory: URL, apiPort: Int, feedPort: Int, webhook: String, adminKey: String,
        coalesceSeconds: Int, pushToStartSpacingSeconds: Int
    ) throws -> [String] {
        let config = directory.appendingPathComponent("matchcast.yaml")
        try """
            polling:
              minPollMs: 100
            activities:
              coalesceSeconds: \(coalesceSeconds)
              pushToStartSpacingSeconds: \(pushToStartSpacingSeconds)
            """.write(to: config, atomically: true, encoding: .utf8)
        return [
            "serve", "--config", config.path, "--port", "\(apiPort)",
            "--store", "sqlite:" + directory.appendingPathComponent("m.sqlite").path,
            "--feed", "http://127.0.0.1:\(feedPort)", "--sink", "webhook:" + webhook,
            "--webhook-secret", WebhookFixture.secretText, "--admin-key", adminKey, "--log-level", "warning",
        ]
    }

    /// A 64-digit hex token, distinct per `(kind, index)`.
    public static func token(_ kind: UInt8, _ index: Int) -> String {
        String(format: "%02x%08x", kind, index) + String(repeating: "0f", count: 27)
    }
}
