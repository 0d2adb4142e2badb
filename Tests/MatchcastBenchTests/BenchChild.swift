import Foundation
import MatchcastTesting
import Testing

/// The built `matchcast-bench`, run as a child process the way its users run it.
enum BenchChild {
    /// Runs it with `arguments`: its exit status and what it wrote to stderr (its tables). Stdout is dropped;
    /// `MATCHCAST_POSTGRES_URL` is passed on only when `postgres` is set. The wait for the child is on a thread of
    /// Dispatch's, not on one of the two threads every other test's tasks share.
    static func run(_ arguments: [String], postgres: String? = nil) async throws -> (status: Int32, errors: String) {
        let binary = try #require(BuiltExecutable.named("matchcast-bench"), "matchcast-bench is built beside the tests")
        return try await withCheckedThrowingContinuation { done in
            DispatchQueue.global().async {
                done.resume(with: Result { try runWaiting(binary, arguments, postgres: postgres) })
            }
        }
    }

    private static func runWaiting(
        _ binary: URL, _ arguments: [String], postgres: String?
    ) throws -> (status: Int32, errors: String) {
        let process = Process()
        process.executableURL = binary
        process.arguments = arguments
        var environment = ProcessInfo.processInfo.environment.filter { $0.key != "MATCHCAST_POSTGRES_URL" }
        if let postgres { environment["MATCHCAST_POSTGRES_URL"] = postgres }
        process.environment = environment
        let errors = Pipe()
        process.standardError = errors
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        let text = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        return (process.terminationStatus, text)
    }
}
