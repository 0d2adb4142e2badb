import Foundation
import MatchcastCore

/// Reads a recording (docs/formats.md, "Recording") and reports every problem by line number.
///
/// Rules: empty lines are ignored; a line that is not a JSON object, lacks or misstates a field,
/// or goes back in time (`t` lower than the line before) is an error, and the caller must refuse
/// to replay. A last line without a trailing newline that does not parse is a recorder cut off
/// mid-write: a warning, and every line before it still replays. Unknown fields are ignored
/// (the format may grow); header names are lower-cased.
public enum RecordingReader {
    /// Parses a whole recording.
    public static func read(_ data: Data) -> RecordingParse {
        var lines: [RecordingLine] = []
        var problems: [RecordingProblem] = []
        var lastT: Double?
        let segments = data.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false)
        let endsWithNewline = data.last == UInt8(ascii: "\n")
        for (offset, segment) in segments.enumerated() {
            let text = JSONObjectScanner.trimmed(Data(segment))
            guard !text.isEmpty else { continue }
            let number = offset + 1
            let isUnterminatedLast = offset == segments.count - 1 && !endsWithNewline
            switch parse(text, line: number, isUnterminatedLast: isUnterminatedLast) {
            case .failure(let lineProblems):
                problems += lineProblems
            case .success(let line):
                if let lastT, line.t < lastT {
                    problems.append(
                        RecordingProblem(
                            line: number, kind: .outOfOrder, field: "t",
                            message: "\(line.t) is earlier than the previous line's \(lastT)"))
                    continue
                }
                lastT = line.t
                lines.append(line)
            }
        }
        return RecordingParse(lines: lines, problems: problems)
    }

    private enum Parsed {
        case success(RecordingLine)
        case failure([RecordingProblem])
    }

    private static func parse(_ text: Data, line number: Int, isUnterminatedLast: Bool) -> Parsed {
        guard (try? JSONSerialization.jsonObject(with: text)) is [String: Any],
            let members = JSONObjectScanner.members(of: text)
        else {
            if isUnterminatedLast {
                return .failure([
                    RecordingProblem(
                        line: number, kind: .truncatedLastLine,
                        message: "last line is incomplete (no newline, not valid JSON); ignored", isFatal: false)
                ])
            }
            return .failure([RecordingProblem(line: number, kind: .malformedJSON, message: "not a valid JSON object")])
        }
        var fields = FieldReader(members: members, line: number)
        let t = fields.t()
        let request = fields.request()
        let status = fields.status()
        let headers = fields.headers()
        let body = fields.body(status: status)
        guard fields.problems.isEmpty, let t, let request, let status else { return .failure(fields.problems) }
        return .success(RecordingLine(t: t, request: request, status: status, headers: headers, body: body))
    }
}

/// Reads and checks the fields of one line, collecting every problem rather than stopping at the first.
private struct FieldReader {
    let members: [String: Data]
    let line: Int
    var problems: [RecordingProblem] = []

    init(members: [String: Data], line: Int) {
        self.members = members
        self.line = line
    }

    mutating func t() -> Double? {
        guard let value: Double = required("t", "a number") else { return nil }
        guard value.isFinite, value >= 0 else {
            flag("t", "must be a number >= 0, got \(value)")
            return nil
        }
        return value
    }

    mutating func request() -> String? {
        guard let value: String = required("request", "a string") else { return nil }
        guard value.hasPrefix("/") else {
            flag("request", "must be a path starting with '/', got '\(value.prefix(40))'")
            return nil
        }
        return value
    }

    mutating func status() -> Int? {
        guard let value: Int = required("status", "an integer") else { return nil }
        guard RecordingLine.statusRange.contains(value) else {
            problems.append(
                RecordingProblem(line: line, kind: .statusOutOfRange, field: "status", message: "must be in 100...599, got \(value)"))
            return nil
        }
        return value
    }

    mutating func headers() -> [String: String] {
        guard let raw = members["headers"], !isNull(raw) else { return [:] }
        guard let value = try? JSON.decoder().decode([String: String].self, from: raw) else {
            flag("headers", "expected an object of strings")
            return [:]
        }
        var lowered: [String: String] = [:]
        for (name, text) in value { lowered[name.lowercased()] = text }
        return lowered
    }

    mutating func body(status: Int?) -> Data? {
        guard let raw = members["body"], !isNull(raw) else { return nil }
        if status == 304 {
            flag("body", "a 304 line has no body")
            return nil
        }
        return raw
    }

    private mutating func required<T: Decodable>(_ field: String, _ expected: String) -> T? {
        guard let raw = members[field] else {
            problems.append(RecordingProblem(line: line, kind: .missingField, field: field, message: "missing"))
            return nil
        }
        guard let value = try? JSON.decoder().decode(T.self, from: raw) else {
            flag(field, "expected \(expected), got \(String(decoding: raw.prefix(40), as: UTF8.self))")
            return nil
        }
        return value
    }

    private mutating func flag(_ field: String, _ message: String) {
        problems.append(RecordingProblem(line: line, kind: .invalidField, field: field, message: message))
    }

    private func isNull(_ raw: Data) -> Bool { raw == Data("null".utf8) }
}
