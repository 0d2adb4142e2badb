#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import MatchcastCore

/// Writes one delivery per line (NDJSON) to a file descriptor, standard output by default.
///
/// A batch is written in chunks of whole lines (256 KiB), so fan-out is not one syscall per device.
public struct StdoutSink: DeliverySink {
    public let name = "stdout"
    private let descriptor: Int32

    public init(fileDescriptor: Int32 = 1) {
        descriptor = fileDescriptor
    }

    public func deliver(_ batch: [Delivery]) async throws {
        // Whole lines, written whenever a chunk's worth is buffered: the buffer is reused, so a fan-out
        // of 100,000 neither holds all its lines at once nor touches fresh memory for each.
        var buffer: [UInt8] = []
        buffer.reserveCapacity(Self.chunk + (batch.first?.payload.bytes.count ?? 0) + 1024)
        var writer = DeliveryJSONWriter()
        // Each delivery is read in place (by index), never copied out of the batch.
        for index in batch.indices {
            writer.append(batch[index], to: &buffer)
            buffer.append(UInt8(ascii: "\n"))
            if buffer.count >= Self.chunk {
                try FileDescriptorWriter.writeAll(buffer, to: descriptor)
                buffer.removeAll(keepingCapacity: true)
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
