import Logging
import ServiceLifecycle

/// Services run in one `ServiceGroup`, as serve runs a broker's; `stop()` shuts them down gracefully and waits for
/// the group to finish.
public struct RunningServices: Sendable {
    public let group: ServiceGroup
    public let task: Task<Void, any Error>

    public init(_ services: [any Service], logger: Logger = Logger(label: "test")) {
        let group = ServiceGroup(configuration: .init(services: services, logger: logger))
        self.group = group
        task = Task { try await group.run() }
    }

    public func stop() async throws {
        await group.triggerGracefulShutdown()
        try await task.value
    }
}
