import CoreMetrics
import Synchronization

/// Counters and timers kept in memory, read back by label and dimensions.
public final class RecordingMetrics: MetricsFactory, Sendable {
    /// A counter or a timer: what it records goes to the owner under its key.
    private final class Handler: CounterHandler, TimerHandler, Sendable {
        let key: String
        let owner: RecordingMetrics

        init(key: String, owner: RecordingMetrics) {
            self.key = key
            self.owner = owner
        }

        func increment(by amount: Int64) { owner.values.withLock { $0[key, default: 0] += amount } }
        func reset() { owner.values.withLock { $0[key] = 0 } }
        func recordNanoseconds(_ duration: Int64) { owner.durations.withLock { $0[key, default: []].append(duration) } }
    }

    fileprivate let values = Mutex<[String: Int64]>([:])
    fileprivate let durations = Mutex<[String: [Int64]]>([:])

    public init() {}

    private static func key(_ label: String, _ dimensions: [(String, String)]) -> String {
        label + "{" + dimensions.sorted { $0.0 < $1.0 }.map { "\($0.0)=\($0.1)" }.joined(separator: ",") + "}"
    }

    /// The counter's value, 0 if it was never made.
    public func counter(_ label: String, _ dimensions: [(String, String)]) -> Int64 {
        values.withLock { $0[Self.key(label, dimensions), default: 0] }
    }

    public func makeCounter(label: String, dimensions: [(String, String)]) -> any CounterHandler {
        Handler(key: Self.key(label, dimensions), owner: self)
    }

    public func makeRecorder(label: String, dimensions: [(String, String)], aggregate: Bool) -> any RecorderHandler {
        NOOPMetricsHandler.instance
    }

    /// What the timer recorded, in nanoseconds, oldest first (none if it was never made).
    public func timings(_ label: String, _ dimensions: [(String, String)] = []) -> [Int64] {
        durations.withLock { $0[Self.key(label, dimensions), default: []] }
    }

    public func makeTimer(label: String, dimensions: [(String, String)]) -> any TimerHandler {
        Handler(key: Self.key(label, dimensions), owner: self)
    }
    public func destroyCounter(_ handler: any CounterHandler) {}
    public func destroyRecorder(_ handler: any RecorderHandler) {}
    public func destroyTimer(_ handler: any TimerHandler) {}
}
