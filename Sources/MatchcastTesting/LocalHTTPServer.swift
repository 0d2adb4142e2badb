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

    /// Serves `responder` on `127.0.0.1` (a free port), logging nothing; returns once it listens. `name` says which
    /// server in an error; `serverName` goes in its `Server` header. The fakes and receivers of the tests and the
    /// benchmarks all start this way.
    public static func start<Context: InitializableFromSource<ApplicationRequestContextSource>>(
        name: String, serverName: String, responder: CallbackResponder<Context>
    ) async throws -> LocalHTTPServer {
        try await start(name: name) { onServerRunning in
            Application(
                responder: responder,
                configuration: ApplicationConfiguration(address: .hostname("127.0.0.1", port: 0), serverName: serverName),
                onServerRunning: onServerRunning,
                logger: Logger(label: "matchcast.\(serverName)", factory: { _ in SwiftLogNoOpLogHandler() }))
        }
    }

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

/// Runs `body` with `started`, then `stop`s it, whether `body` throws or not: the `with` of every fake server.
public func withStopping<Started, T>(
    _ started: Started, stop: (Started) async -> Void, _ body: (Started) async throws -> T
) async throws -> T {
    do {
        let value = try await body(started)
        await stop(started)
        return value
    } catch {
        await stop(started)
        throw error
    }
}
