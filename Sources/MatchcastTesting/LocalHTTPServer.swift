import Hummingbird
import Logging
import NIOCore
import ServiceLifecycle

/// A Hummingbird application serving on a free loopback port in this process until `stop()`: the tests' and the
/// benchmarks' feeds and receivers.
///
/// Stopped by a graceful shutdown, not by cancelling its task: a connection accepted just as the serving task is
/// cancelled is never handed to a handler, and NIO traps when that unused async channel goes away ("Deinited
/// NIOAsyncWriter without calling finish()"; swift-nio #3481 suggests the graceful shutdown). A server still busy
/// after `stopTimeout` (a test's request left hanging on purpose) is cancelled then.
public struct LocalHTTPServer: Sendable {
    public let port: Int
    private let group: ServiceGroup
    private let task: Task<Void, any Error>
    private let stopTimeout: Duration

    /// Runs the application `make` builds with the `onServerRunning` it is given (which reports the port); returns
    /// once it listens. `name` says which server in an error.
    public static func start<App: ApplicationProtocol>(
        name: String, stopTimeout: Duration = .seconds(5),
        _ make: (_ onServerRunning: @escaping @Sendable (any Channel) async -> Void) -> App
    ) async throws -> LocalHTTPServer {
        let (ports, continuation) = AsyncStream<Int>.makeStream()
        let app = make { channel in
            continuation.yield(channel.localAddress?.port ?? 0)
            continuation.finish()
        }
        let logger = Logger(label: "matchcast.local-server", factory: { _ in SwiftLogNoOpLogHandler() })
        let group = ServiceGroup(configuration: .init(services: [app], logger: logger))
        let task = Task {
            defer { continuation.finish() }
            try await group.run()
        }
        var iterator = ports.makeAsyncIterator()
        guard let port = await iterator.next(), port > 0 else {
            await group.triggerGracefulShutdown()
            _ = await task.result
            throw LocalHTTPServerError(name: name)
        }
        return LocalHTTPServer(port: port, group: group, task: task, stopTimeout: stopTimeout)
    }

    /// Stops the server and waits until it has.
    public func stop() async {
        await group.triggerGracefulShutdown()
        let (task, timeout) = (self.task, stopTimeout)
        let stopped = await withTaskGroup(of: Bool.self) { race in
            race.addTask { _ = await task.result; return true }
            race.addTask { try? await Task.sleep(for: timeout); return false }
            let first = await race.next() ?? true
            race.cancelAll()
            return first
        }
        if !stopped {
            task.cancel()
            _ = await task.result
        }
    }
}

/// A local server that did not start listening.
public struct LocalHTTPServerError: Error, CustomStringConvertible {
    public let name: String
    public var description: String { "the \(name) did not start listening" }
}
