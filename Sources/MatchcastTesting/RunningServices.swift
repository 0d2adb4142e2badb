import Logging
import ServiceLifecycle

/// A broker's long-running services in one `ServiceGroup`, as serve runs them; `stop()` shuts them down gracefully
/// and waits for the group to finish.
struct RunningServices: Sendable {
    let group: ServiceGroup
    let task: Task<Void, any Error>

    init(_ services: [any Service]) {
        let group = ServiceGroup(configuration: .init(services: services, logger: Logger(label: "test")))
        self.group = group
        task = Task { try await group.run() }
    }

    func stop() async throws {
        await group.triggerGracefulShutdown()
        try await task.value
    }
}
