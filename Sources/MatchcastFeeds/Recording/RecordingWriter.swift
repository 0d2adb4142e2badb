import Foundation
import Synchronization

/// Writes a recording (docs/formats.md, "Recording"): one JSON object per line, keys sorted, each ended by `\n`,
/// to a file handle or to an in-memory buffer.
///
/// The same lines always give the same bytes. A line that breaks the format, or whose `t` is
/// earlier than the previous line's, is refused before anything is written, so what a writer
/// produces always reads back without problems. Safe to share between tasks: lines are written
/// whole and in the order `append` is called.
public final class RecordingWriter: Sendable {
    private struct State {
        var lastT: Double?
        var data = Data()
        var count = 0
    }

    private let fileHandle: FileHandle?
    private let state = Mutex(State())

    /// A writer that keeps the recording in `data`.
    public init() {
        fileHandle = nil
    }

    /// A writer that appends to `fileHandle`; the caller opens and closes it.
    public init(fileHandle: FileHandle) {
        self.fileHandle = fileHandle
    }

    /// Everything written so far, when writing to memory; empty when writing to a file.
    public var data: Data { state.withLock { $0.data } }

    /// Lines written so far.
    public var count: Int { state.withLock { $0.count } }

    /// Appends one line.
    public func append(_ line: RecordingLine) throws(RecordingWriteError) {
        var bytes = try line.encoded()
        bytes.append(UInt8(ascii: "\n"))
        let result: Result<Void, RecordingWriteError> = state.withLock { state in
            if let lastT = state.lastT, line.t < lastT { return .failure(.outOfOrder(t: line.t, previous: lastT)) }
            if let fileHandle {
                do {
                    try fileHandle.write(contentsOf: bytes)
                } catch {
                    return .failure(.io(error))
                }
            } else {
                state.data.append(bytes)
            }
            state.lastT = line.t
            state.count += 1
            return .success(())
        }
        try result.get()
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
