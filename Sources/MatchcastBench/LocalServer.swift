import Hummingbird
import Logging
import MatchcastTesting

/// A Hummingbird server on `127.0.0.1` (a free port) in the benchmark's process, quiet, running until `stop()`:
/// the feeds and the webhook receiver the benchmarks point serve and the sinks at.
struct LocalServer: Sendable {
    private let server: LocalHTTPServer
    var port: Int { server.port }

    /// Starts serving `responder` and returns once it listens; `name` says which in an error.
    static func start(name: String, responder: CallbackResponder<BasicRequestContext>) async throws -> LocalServer {
        LocalServer(server: try await LocalHTTPServer.start(
            name: "benchmark's \(name)", serverName: "matchcast-bench", responder: responder))
    }

    /// Stops the server and waits until it has.
    func stop() async {
        await server.stop()
    }
}
