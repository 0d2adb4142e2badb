import Logging
import MatchcastCore
import ServiceLifecycle

/// Carries the APNs sink's dead-token reports (410 `Unregistered`, 400 `BadDeviceToken`,
/// `DeviceTokenNotForTopic`) to `LiveActivityService.reportDeadToken`, the path `POST /v1/feedback`
/// takes: a dead update token ends its activity, a dead push-to-start token is forgotten.
///
/// Why a queue and not a direct call: the sink is built before the broker it reports to, and a sink
/// may be driven inline (`DeliveryRelay` in `.inline` mode), inside the lifecycle manager's serial
/// section, where invalidating from the callback would wait on itself. `report` only enqueues; the
/// `Service` from `applying(to:logger:)` applies the reports in order, outside any delivery; a `Broker` given the
/// relay runs it among its services. Reports still queued at shutdown are dropped: the token is reported again at
/// its next push.
public struct DeadTokenRelay: Sendable {
    struct Report: Sendable {
        var token: String
        var reason: String
    }

    private let reports: AsyncStream<Report>
    private let continuation: AsyncStream<Report>.Continuation

    public init() {
        (reports, continuation) = AsyncStream.makeStream(of: Report.self, bufferingPolicy: .unbounded)
    }

    /// For the sink's `onInvalidToken`: enqueues and returns at once.
    public var report: @Sendable (_ token: String, _ reason: String) async -> Void {
        { [continuation] token, reason in continuation.yield(Report(token: token, reason: reason)) }
    }

    /// The service that applies the reports to `service`; run it in the broker's service group.
    /// Call once: the reports can be consumed only once.
    public func applying(to service: LiveActivityService, logger: Logger) -> some Service {
        Applier(reports: reports, service: service, logger: logger)
    }

    private struct Applier: Service {
        let reports: AsyncStream<Report>
        let service: LiveActivityService
        let logger: Logger

        func run() async {
            for await report in reports.cancelOnGracefulShutdown() {
                do {
                    _ = try await service.reportDeadToken(report.token, reason: report.reason)
                } catch {
                    logger.warning("cannot invalidate a dead token", metadata: [
                        "token": "\(Redact.token(report.token))", "reason": "\(report.reason.prefix(64))", "error": "\(error)",
                    ])
                }
            }
        }
    }
}
