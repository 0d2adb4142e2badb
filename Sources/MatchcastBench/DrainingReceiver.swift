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
    private let server: LocalServer

    private init(port: Int, counters: Counters, server: LocalServer) {
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
        let responder = CallbackResponder<BasicRequestContext> { request, _ in
            var read = 0
            for try await chunk in request.body { read += chunk.readableBytes }
            counters.requests.add(1, ordering: .relaxed)
            counters.bytes.add(read, ordering: .relaxed)
            return Response(status: .ok)
        }
        let server = try await LocalServer.start(name: "webhook receiver", responder: responder)
        return DrainingReceiver(port: server.port, counters: counters, server: server)
    }

    /// Stops the server and waits until it has.
    func stop() async {
        await server.stop()
    }

    private final class Counters: Sendable {
        let requests = Atomic<Int>(0)
        let bytes = Atomic<Int>(0)
    }
}
