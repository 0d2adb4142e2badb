import Foundation
import Testing

/// `Scripts/postgres` of this checkout, run on a cluster in a folder of the test's own (`MATCHCAST_PG_DIR`): a
/// PostgreSQL server a test may stop and start again (`pause`, `resume`) without touching the shared one.
enum PostgresScript {
    static let path = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Scripts/postgres")

    /// Runs `Scripts/postgres <command>` on the cluster in `folder`; returns its standard output. Its output goes to
    /// a file, not a pipe, and its end is learned from its termination handler: the server it starts lives on and
    /// would hold a pipe open forever (`waitUntilExit` can hang on a thread of the tests' pool).
    @discardableResult
    static func run(_ command: String, folder: URL) async throws -> String {
        let process = Process()
        process.executableURL = path
        process.arguments = [command]
        process.environment = ProcessInfo.processInfo.environment.merging(["MATCHCAST_PG_DIR": folder.path]) { _, new in new }
        let output = FileManager.default.temporaryDirectory.appendingPathComponent("matchcast-pg-\(UUID().uuidString).out")
        _ = FileManager.default.createFile(atPath: output.path, contents: nil)
        defer { try? FileManager.default.removeItem(at: output) }
        process.standardOutput = try FileHandle(forWritingTo: output)
        let status: Int32 = try await withCheckedThrowingContinuation { continuation in
            process.terminationHandler = { continuation.resume(returning: $0.terminationStatus) }
            do { try process.run() } catch { continuation.resume(throwing: error) }
        }
        try #require(status == 0, "Scripts/postgres \(command) exited \(status)")
        return ((try? String(contentsOf: output, encoding: .utf8)) ?? "").trimmingCharacters(in: .whitespacesAndNewlines)
    }
}
