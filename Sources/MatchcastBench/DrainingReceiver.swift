import Hummingbird
import Logging
import MatchcastCLI
import NIOCore
import Synchronization

/// A webhook endpoint for benchmarks: on `127.0.0.1` (a free port) in this process, it reads every
/// request body to the end, counts requests and bytes, and answers `200` with an empty body. It
/// checks no signature and decodes nothing, so the sender is what gets measured.
///
/// ```swift
/// let receiver = try await DrainingReceiver.start()
/// // post to receiver.url ...
/// let (requests, bytes) = receiver.totals
/// await receiver.stop()
/// ```
final class DrainingReceiver: Sendable {
    /// The port the server listens on.
    let port: Int
    private let counters: Counters
    private let server: Task<Void, any Error>

    private init(port: Int, counters: Counters, server: Task<Void, any Error>) {
        self.port = port
        self.counters = counters
        self.server = server
    }

    /// The endpoint to post to.
    var url: String { "http://127.0.0.1:\(port)/webhook" }

    /// Requests answered and body bytes read so far.
    var totals: (requests: Int, bytes: Int) {
        (counters.requests.load(ordering: .relaxed), counters.bytes.load(ordering: .relaxed))
    }

    /// Starts listening; the server runs in a task this receiver owns until `stop()`.
    static func start() async throws -> DrainingReceiver {
        let counters = Counters()
        let (ports, continuation) = AsyncStream<Int>.makeStream()
        let responder = CallbackResponder<BasicRequestContext> { request, _ in
            var read = 0
            for try await chunk in request.body { read += chunk.readableBytes }
            counters.requests.add(1, ordering: .relaxed)
            counters.bytes.add(read, ordering: .relaxed)
            return Response(status: .ok)
        }
        let app = Application(
            responder: responder,
            configuration: ApplicationConfiguration(
                address: .hostname("127.0.0.1", port: 0), serverName: "matchcast-bench-receiver"),
            onServerRunning: { channel in
                continuation.yield(channel.localAddress?.port ?? 0)
                continuation.finish()
            },
            logger: Logger(label: "matchcast.bench-receiver", factory: { _ in SwiftLogNoOpLogHandler() }))
        let server = Task {
            defer { continuation.finish() }
            try await app.run()
        }
        var iterator = ports.makeAsyncIterator()
        guard let port = await iterator.next(), port > 0 else {
            server.cancel()
            _ = await server.result
            throw CommandFailure("the benchmark's webhook receiver did not start listening")
        }
        return DrainingReceiver(port: port, counters: counters, server: server)
    }

    /// Stops the server and waits until it has.
    func stop() async {
        server.cancel()
        _ = await server.result
    }

    private final class Counters: Sendable {
        let requests = Atomic<Int>(0)
        let bytes = Atomic<Int>(0)
    }
}
