import AsyncHTTPClient
import CoreMetrics
import Foundation
import Logging
import MatchcastCore
import MatchcastDelivery
import MatchcastTesting
import NIOCore
import Synchronization

/// Deliveries, clocks, metrics and an HTTP client for the webhook tests.
enum WebhookFixture {
    /// 24 key bytes; the receiver and sink share it.
    static let secretText = "whsec_" + Data((0..<32).map { UInt8($0 &* 7 &+ 3) }).base64EncodedString()
    static let secret = try! WebhookSecret(secretText)

    static let payload: PushPayload = {
        var state = ContentState(status: "live", statusText: "Live", home: .init(name: "MI", score: "87/6 (14.2)"),
                                 away: .init(name: "CSK", score: "Yet to bat"), summary: "MI 87/6 (14.2) · RR 6.07")
        state.runRate = "RR 6.07"
        return try! PushPayload(APS(timestamp: 1_776_784_329, event: .update, contentState: state, staleDate: 1_776_784_629))
    }()

    /// `count` deliveries with ids `dlv_000000`, `dlv_000001`, … sharing one payload.
    static func deliveries(_ count: Int, prefix: String = "dlv_") -> [Delivery] {
        (0..<count).map { index in
            let token = String(format: "%08x", index) + String(repeating: "ab", count: 28)
            return Delivery(
                id: prefix + String(format: "%06d", index), matchId: "ipl-2026-m41", activityId: "act_\(index % 7)",
                target: PushTarget(kind: .updateToken, value: token),
                apns: APNsHeaders(topic: "com.example.matchcast.push-type.liveactivity", priority: 10, expiration: 1_776_784_629),
                payload: payload)
        }
    }

    /// Runs `body` with a fresh `HTTPClient`, shut down afterwards whether `body` throws or not.
    /// AsyncHTTPClient keeps retrying a refused connection until `connectTimeout`, then reports the refusal.
    static func withClient<T>(
        connectTimeout: Duration = .seconds(2), _ body: (HTTPClient) async throws -> T
    ) async throws -> T {
        var configuration = HTTPClient.Configuration()
        configuration.timeout = .init(connect: .init(connectTimeout), read: .seconds(5))
        let client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
        do {
            let value = try await body(client)
            try await client.shutdown()
            return value
        } catch {
            try? await client.shutdown()
            throw error
        }
    }

    /// A sink posting to `url`, fast retries unless told otherwise.
    static func sink(
        url: String, client: HTTPClient, clock: any Clock<Duration>, deadLetters: any DeadLetterRecorder = InMemoryDeadLetters(),
        metrics: any MetricsFactory = NOOPMetricsHandler.instance, maxBatch: Int = 500, maxConcurrentRequests: Int = 4,
        retry: RetryPolicy = RetryPolicy(initialBackoff: .milliseconds(100), jitter: 0)
    ) throws -> WebhookSink {
        try WebhookSink(
            configuration: WebhookSinkConfiguration(
                url: url, secret: secret, maxBatch: maxBatch, maxConcurrentRequests: maxConcurrentRequests,
                requestTimeout: .seconds(5), retry: retry),
            client: client, deadLetters: deadLetters, clock: clock, metricsFactory: metrics,
            logger: Logging.Logger(label: "test.webhook", factory: { _ in SwiftLogNoOpLogHandler() }))
    }
}

/// A clock on which every sleep returns at once, moving virtual time to its deadline and
/// remembering how long it was asked to sleep.
final class InstantClock: Clock, Sendable {
    typealias Instant = ManualClock.Instant

    private struct State {
        var now = Instant(offset: .zero)
        var sleeps: [Duration] = []
    }

    private let state = Mutex(State())

    var now: Instant { state.withLock { $0.now } }
    var minimumResolution: Duration { .nanoseconds(1) }

    /// Every sleep asked for, in order.
    var sleeps: [Duration] { state.withLock { $0.sleeps } }

    func sleep(until deadline: Instant, tolerance: Duration?) async throws {
        try Task.checkCancellation()
        state.withLock { state in
            state.sleeps.append(state.now.duration(to: deadline))
            state.now = max(state.now, deadline)
        }
        await Task.yield()
    }
}

/// Counters kept in memory, read back by label and dimensions.
final class RecordingMetrics: MetricsFactory, Sendable {
    private final class Handler: CounterHandler, Sendable {
        let key: String
        let owner: RecordingMetrics

        init(key: String, owner: RecordingMetrics) {
            self.key = key
            self.owner = owner
        }

        func increment(by amount: Int64) { owner.values.withLock { $0[key, default: 0] += amount } }
        func reset() { owner.values.withLock { $0[key] = 0 } }
    }

    fileprivate let values = Mutex<[String: Int64]>([:])

    private static func key(_ label: String, _ dimensions: [(String, String)]) -> String {
        label + "{" + dimensions.sorted { $0.0 < $1.0 }.map { "\($0.0)=\($0.1)" }.joined(separator: ",") + "}"
    }

    /// The counter's value, 0 if it was never made.
    func counter(_ label: String, _ dimensions: [(String, String)]) -> Int64 {
        values.withLock { $0[Self.key(label, dimensions), default: 0] }
    }

    func makeCounter(label: String, dimensions: [(String, String)]) -> any CounterHandler {
        Handler(key: Self.key(label, dimensions), owner: self)
    }

    func makeRecorder(label: String, dimensions: [(String, String)], aggregate: Bool) -> any RecorderHandler {
        NOOPMetricsHandler.instance
    }

    func makeTimer(label: String, dimensions: [(String, String)]) -> any TimerHandler { NOOPMetricsHandler.instance }
    func destroyCounter(_ handler: any CounterHandler) {}
    func destroyRecorder(_ handler: any RecorderHandler) {}
    func destroyTimer(_ handler: any TimerHandler) {}
}

/// Every log line with its metadata, as text, to check that nothing secret is logged.
final class CapturedLog: Sendable {
    private let lines = Mutex<[String]>([])

    var all: [String] { lines.withLock { $0 } }

    var logger: Logging.Logger {
        var logger = Logging.Logger(label: "test.webhook") { _ in Handler(log: self) }
        logger.logLevel = .trace
        return logger
    }

    fileprivate func append(_ line: String) { lines.withLock { $0.append(line) } }

    private struct Handler: LogHandler {
        let log: CapturedLog
        var metadata: Logging.Logger.Metadata = [:]
        var logLevel: Logging.Logger.Level = .trace

        subscript(metadataKey key: String) -> Logging.Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }

        func log(event: LogEvent) {
            let merged = metadata.merging(event.metadata ?? [:]) { $1 }
            log.append("\(event.level) \(event.message) \(merged.sorted { $0.key < $1.key })")
        }
    }
}
