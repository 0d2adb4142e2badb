import Hummingbird
import Logging
import MatchcastCLI

/// A Hummingbird server on `127.0.0.1` (a free port) in the benchmark's process, quiet, running until `stop()`:
/// the feeds and the webhook receiver the benchmarks point serve and the sinks at.
struct LocalServer: Sendable {
    let port: Int
    private let task: Task<Void, any Error>

    /// Starts serving `responder` and returns once it listens; `name` says which in an error.
    static func start(name: String, responder: CallbackResponder<BasicRequestContext>) async throws -> LocalServer {
        let (ports, continuation) = AsyncStream<Int>.makeStream()
        let app = Application(
            responder: responder,
            configuration: ApplicationConfiguration(address: .hostname("127.0.0.1", port: 0), serverName: "matchcast-bench"),
            onServerRunning: { channel in
                continuation.yield(channel.localAddress?.port ?? 0)
                continuation.finish()
            },
            logger: Logger(label: "matchcast.bench", factory: { _ in SwiftLogNoOpLogHandler() }))
        let task = Task {
            defer { continuation.finish() }
            try await app.run()
        }
        var iterator = ports.makeAsyncIterator()
        guard let port = await iterator.next(), port > 0 else {
            task.cancel()
            _ = await task.result
            throw CommandFailure("the benchmark's \(name) did not start listening")
        }
        return LocalServer(port: port, task: task)
    }

    /// Stops the server and waits until it has.
    func stop() async {
        task.cancel()
        _ = await task.result
    }
}
