import Foundation

/// Writes a recording (CONTRACTS §2): one JSON object per line, keys sorted, each ended by `\n`,
/// to a file handle or to an in-memory buffer.
///
/// The same lines always give the same bytes. A line that breaks the format, or whose `t` is
/// earlier than the previous line's, is refused before anything is written, so what a writer
/// produces always reads back without problems.
public final class RecordingWriter {
    private enum Destination {
        case memory
        case file(FileHandle)
    }

    private let destination: Destination
    private var lastT: Double?
    /// Everything written so far, when writing to memory; empty when writing to a file.
    public private(set) var data = Data()
    /// Lines written so far.
    public private(set) var count = 0

    /// A writer that keeps the recording in `data`.
    public init() {
        destination = .memory
    }

    /// A writer that appends to `fileHandle`; the caller opens and closes it.
    public init(fileHandle: FileHandle) {
        destination = .file(fileHandle)
    }

    /// Appends one line.
    public func append(_ line: RecordingLine) throws(RecordingWriteError) {
        if let lastT, line.t < lastT { throw .outOfOrder(t: line.t, previous: lastT) }
        var bytes = try line.encoded()
        bytes.append(UInt8(ascii: "\n"))
        switch destination {
        case .memory:
            data.append(bytes)
        case .file(let handle):
            do {
                try handle.write(contentsOf: bytes)
            } catch {
                throw .io(error)
            }
        }
        lastT = line.t
        count += 1
    }

    /// Appends lines in order; stops at the first one refused.
    public func append(contentsOf lines: some Sequence<RecordingLine>) throws(RecordingWriteError) {
        for line in lines { try append(line) }
    }

    /// The recording of `lines` as bytes.
    public static func encode(_ lines: some Sequence<RecordingLine>) throws(RecordingWriteError) -> Data {
        let writer = RecordingWriter()
        try writer.append(contentsOf: lines)
        return writer.data
    }
}
