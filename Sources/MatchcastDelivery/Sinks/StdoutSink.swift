#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Dispatch
import MatchcastCore
import Synchronization

/// Writes one delivery per line (NDJSON) to a file descriptor, standard output by default.
///
/// The lines are written on the sink's own thread (`NDJSONOutput`), not on the few threads Swift concurrency runs
/// everything else on: while the kernel holds a write back (a file written faster than the disk takes it, a pipe whose
/// reader is slow), those threads go on working out the next deliveries. Batches are written whole, one after the
/// other, in the order given. By default `deliver` returns once its batch is written, and the lines are built on the
/// sink's thread too.
///
/// With `writeBehind` > 0, `deliver` builds the lines and returns once its batch is queued for writing, as long as no
/// more than that many batches wait unwritten (otherwise it waits for room): whoever hands over the next batch works
/// beside the writes, and the sink's thread does nothing but write.
/// A write that fails is reported by the next `deliver`, and by `flush()`, and nothing after it is written (the
/// output never has a gap). For a producer whose deliveries live only in its own memory, such as `replay`: a crash
/// loses the queued batches with everything else. `serve` keeps the default, so an outbox never lets go of a delivery
/// that is not written.
public struct StdoutSink: DeliverySink {
    public let name = "stdout"
    private let output: NDJSONOutput

    public init(fileDescriptor: Int32 = 1, writeBehind: Int = 0) {
        output = NDJSONOutput(descriptor: fileDescriptor, writeBehind: writeBehind)
    }

    public func deliver(_ batch: [Delivery]) async throws {
        guard !batch.isEmpty else { return }
        try await output.write(batch)
    }

    public func flush() async throws {
        try await output.flush()
    }
}

/// Turns batches into lines and writes them to a descriptor on a serial queue of its own (one thread at a time, never
/// one of Swift concurrency's).
///
/// A batch's lines are built a chunk (256 KiB) at a time, each chunk written as soon as it is full: one write call per
/// several hundred deliveries, and a fan-out of 100,000 never held as lines at once. Written through (the default),
/// the queue's thread builds and writes, while the caller waits. Written behind, the caller builds and hands each
/// chunk to the queue, whose thread then does nothing but the writes: the kernel's copy of the bytes is what sets the
/// pace of a replay to a file, and it gets a core to itself. One batch is handed over at a time (`turns`), so each
/// batch's lines stay together in the output. The APNs headers and payload, the same for every delivery of one update,
/// are encoded once per update (`DeliveryJSONWriter`); each delivery adds only its id, activity and target.
final class NDJSONOutput: Sendable {
    private let descriptor: Int32
    private let queue = DispatchQueue(label: "matchcast.sink.ndjson")
    /// How many batches may wait unwritten when `write` returns (0: it returns once its batch is written).
    private let writeBehind: Int
    private let behind = Mutex(Behind())
    /// One batch's chunks handed to the queue at a time.
    private let turns = AsyncSerialGate()

    private struct Behind {
        /// Batches handed over and not yet written (or skipped after a failure).
        var queued = 0
        /// Written behind, the first write that failed: every later batch is skipped, every later call throws it.
        var failure: (any Error)?
        /// Callers waiting for the queue to shrink to `writeBehind`: all let go once it has.
        var waiting: [CheckedContinuation<Void, Never>] = []
    }

    /// One batch written behind on its way through the queue: its first failed write, after which its other chunks are
    /// skipped.
    private final class Batch: Sendable {
        let failure = Mutex<(any Error)?>(nil)
    }

    init(descriptor: Int32, writeBehind: Int = 0) {
        self.descriptor = descriptor
        self.writeBehind = max(0, writeBehind)
    }

    /// Writes `batch` after every batch handed over before it; returns once it is written, or, with write-behind,
    /// once it is queued and the queue is within bounds.
    func write(_ batch: [Delivery]) async throws {
        guard writeBehind > 0 else {
            // The caller waits for the write anyway: the lines are built on the queue's thread too, leaving Swift
            // concurrency's threads to the rest of the process meanwhile.
            let descriptor = descriptor
            try await withCheckedThrowingContinuation { (written: CheckedContinuation<Void, any Error>) in
                queue.async {
                    written.resume(with: Result {
                        let write = { (chunk: [UInt8]) throws in try FileDescriptorWriter.writeAll(chunk, to: descriptor) }
                        try write(Self.lines(of: batch, reusing: true, hand: write))
                    })
                }
            }
            return
        }
        // Written behind, the queue's thread is what the caller ends up waiting for: the lines are built here, and
        // each chunk handed over as soon as it is full, for the queue's thread to do nothing but write.
        if let failure = behind.withLock({ $0.failure }) { throw failure }
        let state = Batch()
        await turns.enter()
        behind.withLock { $0.queued += 1 }
        let last = Self.lines(of: batch, reusing: false) { chunk in queue.async { [self] in write(chunk, of: state) } }
        queue.async { [self] in
            write(last, of: state)
            batchDone(state)
        }
        turns.leave()
        // Queued; waited for while too many are.
        await withCheckedContinuation { (room: CheckedContinuation<Void, Never>) in
            let ready = behind.withLock { state -> Bool in
                if state.queued <= writeBehind { return true }
                state.waiting.append(room)
                return false
            }
            if ready { room.resume() }
        }
    }

    /// Returns once every batch handed over is written; throws the first write that failed.
    func flush() async throws {
        await withCheckedContinuation { (drained: CheckedContinuation<Void, Never>) in
            queue.async { drained.resume() }  // the queue is serial: this runs after every batch before it
        }
        if let failure = behind.withLock({ $0.failure }) { throw failure }
    }

    /// The batch's lines: each full chunk to `hand`, the rest (possibly empty) returned. `reusing`: `hand` is done with
    /// a chunk when it returns (it wrote it), so the next chunk is built in the same buffer.
    private static func lines(of batch: [Delivery], reusing: Bool, hand: ([UInt8]) throws -> Void) rethrows -> [UInt8] {
        // A chunk and one more line, or the whole batch when it is smaller (a single start or end).
        let line = (batch.first?.payload.bytes.count ?? 0) + 512
        let capacity = min(Self.chunk, batch.count * line) + line
        var buffer: [UInt8] = []
        buffer.reserveCapacity(capacity)
        var writer = DeliveryJSONWriter()
        try batch.withUnsafeBufferPointer { deliveries in
            // Each delivery is read in place, never copied out of the batch (no retains per delivery).
            for index in deliveries.indices {
                writer.append(deliveries[index], to: &buffer)
                buffer.append(UInt8(ascii: "\n"))
                if buffer.count >= Self.chunk {
                    try hand(buffer)
                    if reusing {
                        buffer.removeAll(keepingCapacity: true)
                    } else {
                        buffer = []
                        buffer.reserveCapacity(capacity)
                    }
                }
            }
        }
        return buffer
    }

    /// On the queue, written behind: one chunk of `batch`, unless a write before it failed (this batch's, or any).
    private func write(_ chunk: [UInt8], of batch: Batch) {
        guard !chunk.isEmpty, batch.failure.withLock({ $0 == nil }), behind.withLock({ $0.failure == nil }) else { return }
        do {
            try FileDescriptorWriter.writeAll(chunk, to: descriptor)
        } catch {
            batch.failure.withLock { $0 = error }
        }
    }

    /// On the queue, after a batch written behind: it leaves the count, its failure stays for every later call, and
    /// the callers waiting for room go on once there is.
    private func batchDone(_ batch: Batch) {
        let failure = batch.failure.withLock { $0 }
        let room = behind.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.queued -= 1
            if state.failure == nil, let failure { state.failure = failure }
            guard state.queued <= writeBehind else { return [] }
            defer { state.waiting.removeAll() }
            return state.waiting
        }
        for waiting in room { waiting.resume() }
    }

    /// Bytes buffered before a write.
    private static let chunk = 1 << 18
}

/// Writes a whole buffer to a descriptor, retrying short writes and EINTR.
enum FileDescriptorWriter {
    static func writeAll(_ bytes: [UInt8], to descriptor: Int32) throws {
        try bytes.withUnsafeBytes { raw in
            var offset = 0
            while offset < raw.count {
                let written = write(descriptor, raw.baseAddress! + offset, raw.count - offset)
                if written < 0 {
                    if errno == EINTR { continue }
                    throw SinkError.write(errno: errno)
                }
                offset += written
            }
        }
    }
}

/// A sink failed to take a batch.
public struct SinkError: Error, Sendable, CustomStringConvertible {
    private enum Kind: Sendable { case write(Int32) }
    private let kind: Kind

    static func write(errno: Int32) -> SinkError { SinkError(kind: .write(errno)) }

    public var description: String {
        switch kind {
        case .write(let code): "write failed: \(String(cString: strerror(code)))"
        }
    }
}
