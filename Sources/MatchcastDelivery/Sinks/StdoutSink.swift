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
/// The lines are built and written on the sink's own thread (`NDJSONOutput`), not on the few threads Swift
/// concurrency runs everything else on: while the kernel holds a write back (a file written faster than the disk
/// takes it, a pipe whose reader is slow), those threads go on working out the next deliveries. Batches are written
/// whole, one after the other, in the order given. By default `deliver` returns once its batch is written.
///
/// With `writeBehind` > 0, `deliver` returns once its batch is queued for writing, as long as no more than that many
/// batches wait unwritten (otherwise it waits for room): whoever hands over the next batch works beside the writes.
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

/// A serial queue (one thread at a time, never one of Swift concurrency's) that turns batches into lines and
/// writes them to a descriptor.
///
/// A batch is built in a buffer of whole lines, written whenever a chunk's worth (256 KiB) is in it: one write
/// call per several hundred deliveries, and a fan-out of 100,000 never holds all its lines at once. The APNs
/// headers and payload, the same for every delivery of one update, are encoded once per update
/// (`DeliveryJSONWriter`); each delivery adds only its id, activity and target.
final class NDJSONOutput: Sendable {
    private let descriptor: Int32
    private let queue = DispatchQueue(label: "matchcast.sink.ndjson")
    /// How many batches may wait unwritten when `write` returns (0: it returns once its batch is written).
    private let writeBehind: Int
    private let behind = Mutex(Behind())

    private struct Behind {
        /// Batches handed over and not yet written (or skipped after a failure).
        var queued = 0
        /// The first write that failed: every later batch is skipped, every later call throws it.
        var failure: (any Error)?
        /// Callers waiting for the queue to shrink to `writeBehind`: all let go once it has.
        var waiting: [CheckedContinuation<Void, Never>] = []
    }

    init(descriptor: Int32, writeBehind: Int = 0) {
        self.descriptor = descriptor
        self.writeBehind = max(0, writeBehind)
    }

    /// Writes `batch` after every batch handed over before it; returns once it is written, or, with write-behind,
    /// once it is queued and the queue is within bounds.
    func write(_ batch: [Delivery]) async throws {
        let descriptor = descriptor
        guard writeBehind > 0 else {
            try await withCheckedThrowingContinuation { (written: CheckedContinuation<Void, any Error>) in
                queue.async {
                    written.resume(with: Result { try Self.writeLines(of: batch, to: descriptor) })
                }
            }
            return
        }
        // Queued at once (so batches keep the order they were handed over in), then waited for while too many are.
        let full = try behind.withLock { state throws -> Bool in
            if let failure = state.failure { throw failure }
            state.queued += 1
            return state.queued > writeBehind
        }
        queue.async { [self] in
            let skip = behind.withLock { $0.failure != nil }
            var failure: (any Error)?
            if !skip {
                do { try Self.writeLines(of: batch, to: descriptor) } catch { failure = error }
            }
            let room = behind.withLock { state -> [CheckedContinuation<Void, Never>] in
                state.queued -= 1
                if state.failure == nil, let failure { state.failure = failure }
                guard state.queued <= writeBehind else { return [] }
                defer { state.waiting.removeAll() }
                return state.waiting
            }
            for waiting in room { waiting.resume() }
        }
        guard full else { return }
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

    private static func writeLines(of batch: [Delivery], to descriptor: Int32) throws {
        var buffer: [UInt8] = []
        // A chunk and one more line, or the whole batch when it is smaller (a single start or end).
        let line = (batch.first?.payload.bytes.count ?? 0) + 512
        buffer.reserveCapacity(min(chunk, batch.count * line) + line)
        var writer = DeliveryJSONWriter()
        try batch.withUnsafeBufferPointer { deliveries in
            // Each delivery is read in place, never copied out of the batch (no retains per delivery).
            for index in deliveries.indices {
                writer.append(deliveries[index], to: &buffer)
                buffer.append(UInt8(ascii: "\n"))
                if buffer.count >= chunk {
                    try FileDescriptorWriter.writeAll(buffer, to: descriptor)
                    buffer.removeAll(keepingCapacity: true)
                }
            }
        }
        if !buffer.isEmpty { try FileDescriptorWriter.writeAll(buffer, to: descriptor) }
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
