import Foundation
import Logging
import ServiceLifecycle

/// Wakes the lifecycle manager when an activity has something due (a coalesced update, a
/// stale-date refresh, a restart, a spaced-out start), at least once per `maxInterval`.
public struct LifecycleTicker: Service {
    private let service: LiveActivityService
    private let clock: any Clock<Duration>
    private let now: @Sendable () -> Date
    private let maxInterval: Duration
    private let logger: Logger

    public init(
        service: LiveActivityService, clock: any Clock<Duration>, now: @escaping @Sendable () -> Date,
        maxInterval: Duration = .seconds(1), logger: Logger
    ) {
        self.service = service
        self.clock = clock
        self.now = now
        self.maxInterval = maxInterval
        self.logger = logger
    }

    public func run() async throws {
        var lastCensus: Date?
        while !Task.isShuttingDownGracefully && !Task.isCancelled {
            var wait = maxInterval
            if lastCensus.map({ now().timeIntervalSince($0) >= 10 }) ?? true {
                await service.recordCensus()
                lastCensus = now()
            }
            do {
                if let next = try await service.lifecycle.tick() {
                    let seconds = max(0.001, next.timeIntervalSince(now()))
                    wait = min(wait, .milliseconds(Int64(seconds * 1000)))
                }
            } catch {
                logger.error("tick failed", metadata: ["error": "\(error)"])
            }
            let delay = wait
            guard (try? await cancelWhenGracefulShutdown({ try await clock.sleep(for: delay) })) != nil else { break }
        }
        // What the last tick left to note, before the store closes.
        await service.lifecycle.flushSightings()
    }
}
