/// Why a line could not be written to a recording.
///
/// `reason` is a short fixed string (`invalid_line`, `out_of_order`, `io`); `description` says
/// what was wrong with which field.
public struct RecordingWriteError: Error, Sendable, Hashable, CustomStringConvertible {
    private enum Code: Sendable, Hashable {
        case invalid(field: String, reason: String)
        case outOfOrder(t: Double, previous: Double)
        case io(String)
    }

    private let code: Code

    private init(_ code: Code) { self.code = code }

    /// A field of the line breaks the recording format (docs/formats.md, "Recording").
    public static func invalid(field: String, reason: String) -> RecordingWriteError {
        RecordingWriteError(.invalid(field: field, reason: reason))
    }

    /// The line's `t` is earlier than the line written before it.
    public static func outOfOrder(t: Double, previous: Double) -> RecordingWriteError {
        RecordingWriteError(.outOfOrder(t: t, previous: previous))
    }

    /// The destination refused the bytes.
    public static func io(_ underlying: any Error) -> RecordingWriteError {
        RecordingWriteError(.io(String(describing: underlying)))
    }

    /// One of `invalid_line`, `out_of_order`, `io`: never carries values.
    public var reason: String {
        switch code {
        case .invalid: "invalid_line"
        case .outOfOrder: "out_of_order"
        case .io: "io"
        }
    }

    /// The field at fault, for an invalid line.
    public var field: String? {
        if case .invalid(let field, _) = code { return field }
        return nil
    }

    public var description: String {
        switch code {
        case .invalid(let field, let reason): "field '\(field)': \(reason)"
        case .outOfOrder(let t, let previous): "field 't': \(t) is earlier than the previous line's \(previous)"
        case .io(let underlying): "writing the recording failed: \(underlying)"
        }
    }
}
