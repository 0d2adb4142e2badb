/// Something wrong with one line of a recording, named by its 1-based line number.
///
/// `description` is one line: `line 3: field 'status': must be in 100...599, got 42`.
public struct RecordingProblem: Sendable, Hashable, CustomStringConvertible {
    /// What kind of problem it is.
    public enum Kind: String, Sendable, Hashable, CaseIterable {
        /// The line is not a JSON object.
        case malformedJSON = "malformed_json"
        /// A required field (`t`, `request`, `status`) is absent.
        case missingField = "missing_field"
        /// A field has the wrong type or an impossible value.
        case invalidField = "invalid_field"
        /// `t` is earlier than the previous line's.
        case outOfOrder = "out_of_order"
        /// `status` is not an HTTP status (100...599).
        case statusOutOfRange = "status_out_of_range"
        /// The last line has no newline and does not parse: the recorder was cut off mid-write.
        case truncatedLastLine = "truncated_last_line"
    }

    /// 1-based line number in the file; empty lines count.
    public var line: Int
    public var kind: Kind
    /// The field at fault, when the problem is about one.
    public var field: String?
    public var message: String
    /// Whether the recording must not be replayed. Only a truncated last line is a warning.
    public var isFatal: Bool

    public init(line: Int, kind: Kind, field: String? = nil, message: String, isFatal: Bool = true) {
        self.line = line
        self.kind = kind
        self.field = field
        self.message = message
        self.isFatal = isFatal
    }

    public var description: String {
        let fieldText = field.map { "field '\($0)': " } ?? ""
        return "line \(line)\(isFatal ? "" : " (warning)"): \(fieldText)\(message)"
    }
}

/// A whole recording as read: the lines that can be replayed and every problem found.
public struct RecordingParse: Sendable, Hashable {
    /// Valid lines, in file order.
    public var lines: [RecordingLine]
    /// Every problem, in line order.
    public var problems: [RecordingProblem]

    public init(lines: [RecordingLine], problems: [RecordingProblem]) {
        self.lines = lines
        self.problems = problems
    }

    /// Whether any problem forbids replaying the recording; the caller reports all of `problems`.
    public var isFatal: Bool { problems.contains(where: \.isFatal) }

    /// Problems that forbid a replay.
    public var errors: [RecordingProblem] { problems.filter(\.isFatal) }

    /// Problems that are reported while the rest still replays.
    public var warnings: [RecordingProblem] { problems.filter { !$0.isFatal } }
}
