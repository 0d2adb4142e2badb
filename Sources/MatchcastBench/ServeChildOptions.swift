import ArgumentParser
import Foundation
import MatchcastCLI

/// The options of the benchmarks that run `matchcast serve` as a child (`serve`, `polls`, `soak`, `api-latency`):
/// which stores, which PostgreSQL server, how the API is driven, and which `matchcast` to start.
struct ServeChildOptions: ParsableArguments {
    @Option(
        help: """
            Stores to run serve on, one after the other: memory, sqlite, postgres (a comma list), or all. \
            (default: \(Self.defaultStore))
            """,
        transform: BenchStoreList.parse)
    var store = Self.defaultStore
    static let defaultStore = BenchStoreList([.sqlite])

    @Option(name: .customLong("postgres-url"), help: """
        The PostgreSQL server for --store postgres (default: MATCHCAST_POSTGRES_URL). A database of the \
        benchmark's own is created there and dropped afterwards.
        """)
    var postgresURL: String?

    @Option(help: "Concurrent API clients for the setup (keep-alive connections).")
    var clients = 8

    @Option(help: "serve's --log-level (its stderr goes to a file in the temporary folder).")
    var serveLogLevel = "warning"

    @Option(help: "Seconds any one setup phase may take before the run fails.")
    var timeout = 300

    @Option(help: "The matchcast executable to start (default: the one beside this one).")
    var executable: String?

    func validate() throws {
        guard (1...64).contains(clients) else { throw ValidationError("--clients must be 1...64") }
        guard (1...3600).contains(timeout) else { throw ValidationError("--timeout must be 1...3600 seconds") }
    }

    /// The `matchcast` to start.
    var matchcast: String { executable ?? BenchExecutables.beside("matchcast") }

    /// The PostgreSQL server when `store` names postgres: the option, else MATCHCAST_POSTGRES_URL.
    func postgresServer() throws -> String? {
        try store.postgresServer(option: postgresURL, environment: ProcessInfo.processInfo.environment)
    }

    /// `postgresServer()`, or `matchcast-bench <command>: <why>` on stderr and exit code 2 before anything runs.
    func postgresServer(for command: String) throws -> String? {
        do {
            return try postgresServer()
        } catch {
            StandardStreams.err("matchcast-bench \(command): \(error)")
            throw ExitCode(2)
        }
    }
}
