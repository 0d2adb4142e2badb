import Foundation
import MatchcastTesting

#if canImport(Glibc)
import Glibc
#endif

/// A `matchcast` child process, its output in a log file.
final class MatchcastProcess: @unchecked Sendable {
    private let process: Process

    private init(process: Process) {
        self.process = process
    }

    /// `matchcast` beside the test bundle (`swift build` puts both in the same folder).
    static var binary: URL? { BuiltExecutable.named("matchcast") }

    static func start(_ binary: URL, _ arguments: [String], log directory: URL, name: String) throws -> MatchcastProcess {
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

    /// Whether the process has not exited yet.
    var isRunning: Bool { process.isRunning }

    /// SIGKILL: no handler runs, nothing is flushed.
    func kill() {
        guard process.isRunning else { return }
        _ = Glibc.kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }

    /// Sends `number` and returns at once.
    func signal(_ number: Int32) {
        guard process.isRunning else { return }
        _ = Glibc.kill(process.processIdentifier, number)
    }

    func terminate() {
        guard process.isRunning else { return }
        process.terminate()
        process.waitUntilExit()
    }

    /// The last `lines` lines of every `*.log` in the folder, for a failure report.
    static func logs(_ directory: URL, lines: Int = 40) -> String {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
        return names.filter { $0.hasSuffix(".log") }.sorted().map { name in
            let text = (try? String(contentsOf: directory.appendingPathComponent(name), encoding: .utf8)) ?? ""
            return "--- \(name)\n" + text.split(separator: "\n").suffix(lines).joined(separator: "\n")
        }.joined(separator: "\n")
    }

    /// A port nothing listens on now, for a child process to bind.
    static func freePort() throws -> Int {
        try ReservedPort.free()
    }


    /// A 64-digit hex token, distinct per `(kind, index)`.
    static func token(_ kind: UInt8, _ index: Int) -> String {
        String(format: "%02x%08x", kind, index) + String(repeating: "0f", count: 27)
    }
}
