#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import MatchcastCore
import MatchcastDelivery
import Synchronization

/// Sits between the dispatcher and the benchmarked sink: passes every batch on unchanged (or in
/// chunks of `chunk` deliveries, one `deliver` call each, in order) and notes, per measurement
/// window, when the first batch arrived, when the inner sink returned for the last one ("last byte
/// written"), how many deliveries went through, and which payload buffers they carried.
///
/// Outside a window it also notes every `start` it passes, so the benchmark can act as the app
/// and report each started activity's update token.
final class MeasuringSink: DeliverySink, Sendable {
    /// What one window saw.
    struct Window: Sendable {
        var firstCall: ContinuousClock.Instant?
        var lastReturn: ContinuousClock.Instant?
        /// CPU time of the whole process (all threads) when the last batch returned.
        var cpuAtLastReturn: Duration?
        var deliveries = 0
        /// `deliver` calls made to the inner sink.
        var calls = 0
        var failures = 0
        /// The payload buffers the deliveries carried, told apart by address: one pointer comparison per delivery
        /// (the deliveries of one update share their payload, so the set grows only when it changes). Keeping the
        /// batches themselves until the window closes would hold a whole fan-out's deliveries (a million, with their
        /// id strings) and count them in the resident memory measured.
        var payloadBuffers: Set<UInt> = []
        var lastPayloadBuffer: UInt?
        var firstPayload: PushPayload?

        /// How many distinct payload buffers the window's deliveries share: 1 when the payload was
        /// built once for the update, N when it was built per device.
        var distinctPayloads: Int { payloadBuffers.count }

        mutating func note(_ batch: [Delivery]) {
            if firstPayload == nil { firstPayload = batch.first?.payload }
            for index in batch.indices {
                let buffer = batch[index].payload.bytes.withUnsafeBufferPointer { UInt(bitPattern: $0.baseAddress) }
                if buffer != lastPayloadBuffer {
                    payloadBuffers.insert(buffer)
                    lastPayloadBuffer = buffer
                }
            }
        }
    }

    let name: String
    var countsDeliveries: Bool { inner.countsDeliveries }
    private let inner: any DeliverySink
    private let chunk: Int?
    private let state = Mutex<(window: Window?, started: [Started], delivered: Int)>((nil, [], 0))

    init(inner: any DeliverySink, chunk: Int?) {
        self.inner = inner
        self.chunk = chunk
        name = inner.name
    }

    func deliver(_ batch: [Delivery]) async throws {
        let arrived = ContinuousClock.now
        let measuring = state.withLock { state -> Bool in
            guard state.window != nil else { return false }
            if state.window!.firstCall == nil { state.window!.firstCall = arrived }
            state.window!.calls += chunk.map { (batch.count + $0 - 1) / $0 } ?? 1
            state.window!.note(batch)
            return true
        }
        if !measuring { noteStarts(batch) }
        do {
            if let chunk, batch.count > chunk {
                for start in stride(from: 0, to: batch.count, by: chunk) {
                    try await inner.deliver(Array(batch[start..<min(start + chunk, batch.count)]))
                }
            } else {
                try await inner.deliver(batch)
            }
        } catch {
            state.withLock { $0.window?.failures += batch.count }
            throw error
        }
        let returned = ContinuousClock.now
        let cpu = ProcessCPU.now()
        state.withLock { state in
            state.delivered += batch.count
            state.window?.lastReturn = returned
            state.window?.cpuAtLastReturn = cpu
            state.window?.deliveries += batch.count
        }
    }

    /// Starts a measurement window.
    func open() {
        state.withLock { $0.window = Window() }
    }

    /// Ends the window and returns what it saw.
    func close() -> Window {
        state.withLock { state in
            defer { state.window = nil }
            return state.window ?? Window()
        }
    }

    /// Every delivery handed to the inner sink so far, measured or not.
    var delivered: Int { state.withLock { $0.delivered } }

    /// An activity started by push-to-start: its ids and the push-to-start token it went to.
    typealias Started = (activityId: String, matchId: String, pushToStartToken: String)

    /// The activities started (a `start` passed through) since the last call, outside windows.
    func takeStarted() -> [Started] {
        state.withLock { state in
            defer { state.started.removeAll() }
            return state.started
        }
    }

    private func noteStarts(_ batch: [Delivery]) {
        let started = batch.filter { $0.payload.aps.event == .start }
            .map { (activityId: $0.activityId, matchId: $0.matchId, pushToStartToken: $0.target.value) }
        guard !started.isEmpty else { return }
        state.withLock { $0.started.append(contentsOf: started) }
    }
}

/// CPU time used by this process so far, all threads (`CLOCK_PROCESS_CPUTIME_ID`). Compared with
/// wall time it tells whether a measurement was CPU-bound or shared the cores with other work.
enum ProcessCPU {
    static func now() -> Duration {
        var spec = timespec()
        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &spec)
        return .seconds(Int64(spec.tv_sec)) + .nanoseconds(Int64(spec.tv_nsec))
    }
}
