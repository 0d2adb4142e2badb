#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Dispatch
import MatchcastCore

/// Writes one delivery per line (NDJSON) to a file descriptor, standard output by default.
///
/// The lines are built and written on the sink's own thread (`NDJSONOutput`), not on the few threads Swift
/// concurrency runs everything else on: while the kernel holds a write back (a file written faster than the disk
/// takes it, a pipe whose reader is slow), those threads go on working out the next deliveries. `deliver`
/// returns once its batch is written; batches are written whole, one after the other, in the order given.
public struct StdoutSink: DeliverySink {
    public let name = "stdout"
    private let output: NDJSONOutput

    public init(fileDescriptor: Int32 = 1) {
        output = NDJSONOutput(descriptor: fileDescriptor)
    }

    public func deliver(_ batch: [Delivery]) async throws {
        guard !batch.isEmpty else { return }
        try await output.write(batch)
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

    init(descriptor: Int32) {
        self.descriptor = descriptor
    }

    /// Writes `batch` after every batch handed over before it; returns once it is written.
    func write(_ batch: [Delivery]) async throws {
        let descriptor = descriptor
        try await withCheckedThrowingContinuation { (written: CheckedContinuation<Void, any Error>) in
            queue.async {
                written.resume(with: Result { try Self.writeLines(of: batch, to: descriptor) })
            }
        }
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
