import Foundation
import MatchcastCore
import Testing

@testable import MatchcastFeeds

/// The recording format (docs/formats.md, "Recording"): writing, reading back, and every problem a reader reports.
@Suite("Recording reader and writer")
struct RecordingTests {
    static let body = Data(#"{"match":{"away":{"id":"a","name":"Away FC","short":"AWA"},"home":{"id":"h","name":"Home FC","short":"HOM"},"id":"m1","score":{"away":0,"home":1},"sport":"football","status":"live"},"retryAfterMs":5000}"#.utf8)

    static let lines = [
        RecordingLine(t: 0, request: "/matches/m1", status: 200, headers: ["etag": "\"v1\""], body: body),
        RecordingLine(t: 12.503, request: "/matches/m1", status: 304, headers: ["etag": "\"v1\""]),
        RecordingLine(t: 12.503, request: "/live-matches", status: 503, headers: ["retry-after": "30"]),
    ]

    static func text(_ data: Data) -> String { String(decoding: data, as: UTF8.self) }

    @Test func writesOneSortedObjectPerLine() throws {
        let data = try RecordingWriter.encode(Self.lines)
        let rows = Self.text(data).split(separator: "\n", omittingEmptySubsequences: false)
        #expect(rows.count == 4 && rows.last == "")
        #expect(rows[0] == #"{"body":"# + Self.text(Self.body) + #","headers":{"etag":"\"v1\""},"request":"/matches/m1","status":200,"t":0}"#)
        #expect(rows[1] == #"{"headers":{"etag":"\"v1\""},"request":"/matches/m1","status":304,"t":12.503}"#)
    }

    @Test func roundTripKeepsBodyBytes() throws {
        let data = try RecordingWriter.encode(Self.lines)
        let parse = RecordingReader.read(data)
        #expect(parse.problems.isEmpty)
        #expect(parse.lines == Self.lines)
        #expect(parse.lines[0].response == FeedResponse(status: 200, headers: ["etag": "\"v1\""], body: Self.body))
        #expect(parse.lines[1].response.body == nil)
        // Bytes are stable: writing what was read gives the same file.
        #expect(try RecordingWriter.encode(parse.lines) == data)
        #expect(try RecordingWriter.encode(Self.lines) == data)
    }

    @Test func readerKeepsForeignBodyBytesExactly() throws {
        // Unsorted keys, spaces, escaped slash, a float: all must reach the pipeline untouched.
        let body = #"{ "z": 1.50, "a": "x\/y", "n": [1, {"k": "}"}] }"#
        let line = #"{"t": 1, "request": "/live-matches", "status": 200, "body": \#(body), "headers": {"ETag": "w"}}"# + "\n"
        let parse = RecordingReader.read(Data(line.utf8))
        #expect(parse.problems.isEmpty)
        #expect(parse.lines.first?.body == Data(body.utf8))
        #expect(parse.lines.first?.headers == ["etag": "w"])
    }

    @Test func writerRefusesWhatAReaderWouldReject() {
        let writer = RecordingWriter()
        #expect(throws: RecordingWriteError.invalid(field: "t", reason: "must be a finite number >= 0, got -1.0")) {
            try writer.append(RecordingLine(t: -1, request: "/x", status: 200))
        }
        #expect(throws: RecordingWriteError.invalid(field: "status", reason: "must be in 100...599, got 42")) {
            try writer.append(RecordingLine(t: 1, request: "/x", status: 42))
        }
        #expect((try? writer.append(RecordingLine(t: 1, request: "/x", status: 304, body: Data("{}".utf8)))) == nil)
        #expect((try? writer.append(RecordingLine(t: 1, request: "/x", status: 200, body: Data("{nope".utf8)))) == nil)
        #expect(throws: Never.self) { try writer.append(RecordingLine(t: 5, request: "/x", status: 200)) }
        #expect(throws: RecordingWriteError.outOfOrder(t: 4, previous: 5)) {
            try writer.append(RecordingLine(t: 4, request: "/x", status: 200))
        }
        #expect(writer.count == 1)
    }

    @Test func prettyPrintedBodyIsKeptOnOneLine() throws {
        let body = Data("{\n  \"a\": 1,\r\n  \"b\": [2]\n}\n".utf8)
        let data = try RecordingWriter.encode([RecordingLine(t: 0, request: "/x", status: 200, body: body)])
        #expect(Self.text(data) == #"{"body":{  "a": 1,  "b": [2]},"headers":{},"request":"/x","status":200,"t":0}"# + "\n")
        #expect(RecordingReader.read(data).problems.isEmpty)
    }

    @Test func fileHandleWriterWritesTheSameBytes() throws {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("recording-\(UUID().uuidString).ndjson")
        defer { try? FileManager.default.removeItem(at: url) }
        #expect(FileManager.default.createFile(atPath: url.path, contents: nil))
        let handle = try FileHandle(forWritingTo: url)
        let writer = RecordingWriter(fileHandle: handle)
        try writer.append(contentsOf: Self.lines)
        try handle.close()
        #expect(try Data(contentsOf: url) == RecordingWriter.encode(Self.lines))
        #expect(writer.data.isEmpty)
    }

    // MARK: Problems

    static func read(_ rows: [String], trailingNewline: Bool = true) -> RecordingParse {
        RecordingReader.read(Data((rows.joined(separator: "\n") + (trailingNewline ? "\n" : "")).utf8))
    }

    static let good = #"{"t": 1, "request": "/matches/m1", "status": 200, "body": {}}"#

    @Test func emptyLinesAreIgnoredButCounted() {
        let parse = Self.read(["", Self.good, "   ", #"{"t": 2, "request": "/x", "status": "ok"}"#])
        #expect(parse.lines.count == 1)
        #expect(parse.problems.map(\.line) == [4])
    }

    @Test func malformedLineInTheMiddleIsFatal() {
        let parse = Self.read([Self.good, #"{"t": 2, "request": "#, Self.good, "[1, 2]"])
        #expect(parse.isFatal)
        #expect(parse.problems.map(\.line) == [2, 4])
        #expect(parse.problems.allSatisfy { $0.kind == .malformedJSON && $0.isFatal })
        #expect(parse.lines.count == 2)
        #expect(parse.problems[0].description == "line 2: not a valid JSON object")
    }

    @Test func missingAndInvalidFieldsAreNamed() {
        let parse = Self.read([
            #"{"request": "/x", "status": 200}"#,
            #"{"t": "soon", "request": "/x", "status": 200}"#,
            #"{"t": 1, "request": "x", "status": 200}"#,
            #"{"t": 1, "status": 200.5}"#,
            #"{"t": 1, "request": "/x", "status": 200, "headers": {"etag": 7}}"#,
            #"{"t": -3, "request": "/x", "status": 304, "body": {"a": 1}}"#,
        ])
        let found = parse.problems.map { "\($0.line) \($0.kind.rawValue) \($0.field ?? "-")" }
        #expect(found == [
            "1 missing_field t",
            "2 invalid_field t",
            "3 invalid_field request",
            "4 missing_field request", "4 invalid_field status",
            "5 invalid_field headers",
            "6 invalid_field t", "6 invalid_field body",
        ])
        #expect(parse.isFatal)
        #expect(parse.lines.isEmpty)
        #expect(parse.problems[0].description == "line 1: field 't': missing")
    }

    @Test func statusOutOfRange() {
        let parse = Self.read([Self.good, #"{"t": 2, "request": "/x", "status": 42}"#, #"{"t": 2, "request": "/x", "status": 600}"#])
        #expect(parse.problems.map(\.kind) == [.statusOutOfRange, .statusOutOfRange])
        #expect(parse.problems.map(\.line) == [2, 3])
        #expect(parse.problems[0].description == "line 2: field 'status': must be in 100...599, got 42")
    }

    @Test func outOfOrderIsFatal() {
        let parse = Self.read([
            #"{"t": 5, "request": "/x", "status": 200}"#,
            #"{"t": 5, "request": "/x", "status": 200}"#,
            #"{"t": 4.5, "request": "/x", "status": 200}"#,
            #"{"t": 6, "request": "/x", "status": 200}"#,
        ])
        #expect(parse.isFatal)
        #expect(parse.problems.count == 1)
        #expect(parse.problems.first?.kind == .outOfOrder)
        #expect(parse.problems.first?.line == 3)
        #expect(parse.problems.first?.field == "t")
        #expect(parse.lines.map(\.t) == [5, 5, 6])
    }

    @Test func truncatedLastLineIsAWarningAndTheRestReplays() throws {
        let full = try RecordingWriter.encode(Self.lines)
        let cut = full + Data(#"{"body":{"match":{"id":"m1","sp"#.utf8)
        let parse = RecordingReader.read(cut)
        #expect(!parse.isFatal)
        #expect(parse.lines == Self.lines)
        #expect(parse.warnings.map(\.kind) == [.truncatedLastLine])
        #expect(parse.warnings.first?.line == 4)
        #expect(parse.warnings.first?.description.hasPrefix("line 4 (warning): ") == true)
    }

    @Test func malformedLastLineWithNewlineIsFatal() {
        let parse = Self.read([Self.good, #"{"t": 2, "req"#])
        #expect(parse.isFatal)
        #expect(parse.problems.map(\.kind) == [.malformedJSON])
    }

    @Test func completeLastLineWithoutNewlineIsRead() {
        let parse = Self.read([Self.good, Self.good], trailingNewline: false)
        #expect(parse.problems.isEmpty)
        #expect(parse.lines.count == 2)
    }

    @Test func crlfLineEndsAreAccepted() {
        let parse = RecordingReader.read(Data((Self.good + "\r\n" + Self.good + "\r\n").utf8))
        #expect(parse.problems.isEmpty)
        #expect(parse.lines.count == 2)
    }

    @Test func unknownFieldsAreIgnoredAndNullBodyIsNone() {
        let parse = Self.read([#"{"t": 0, "request": "/x", "status": 204, "body": null, "note": {"a": [1]}}"#])
        #expect(parse.problems.isEmpty)
        #expect(parse.lines.first?.body == nil)
    }
}
