import Foundation
import Testing

@testable import MatchcastCore

@testable import MatchcastFeeds

/// Reading back what an importer produced.
enum ImportCheck {
    /// Every line's body as the pipeline decodes it. Each real body also holds the pipeline's fast paths to
    /// Foundation's: read without `Codable` (`FeedBodyReading`) as Foundation's decoder reads it, and the snapshot
    /// written for the stores (`CanonicalJSONWriter`) byte for byte as `JSON.encoder()` writes it.
    static func responses(_ lines: [RecordingLine]) throws -> [MatchResponse] {
        try lines.map { line in
            let body = try #require(line.body, "line at t=\(line.t) has no body")
            let response = try FeedDecoding.match(body)
            let fast = FeedBodyReading.match(body)
            #expect(fast != nil, "a plain body left to Foundation at t=\(line.t)")
            let decoded = try FeedDecoding.decodedMatch(body)
            #expect(response.match == decoded.match && response.retryAfterMs == decoded.retryAfterMs, "t=\(line.t)")
            #expect(CanonicalJSONWriter.encode(response.match) == Array(try JSON.encoder().encode(response.match)), "t=\(line.t)")
            return response
        }
    }

    /// The invariants every imported recording keeps; returns the problems found.
    static func invariants(_ lines: [RecordingLine], id: String) -> [String] {
        var problems: [String] = []
        guard !lines.isEmpty else { return ["no lines"] }
        var lastT = -Double.infinity
        var lastSeq = Int.min
        var statuses: [MatchStatus] = []
        for (index, line) in lines.enumerated() {
            if line.t < lastT { problems.append("line \(index + 1): t \(line.t) < \(lastT)") }
            lastT = line.t
            if line.status != 200 || line.request != "/matches/\(id)" {
                problems.append("line \(index + 1): \(line.status) \(line.request)")
            }
            guard let body = line.body else {
                problems.append("line \(index + 1): no body")
                continue
            }
            let response: MatchResponse
            do {
                response = try FeedDecoding.match(body)
            } catch {
                problems.append("line \(index + 1): \(error)")
                continue
            }
            let seq = response.match.seq ?? Int.min
            if seq <= lastSeq { problems.append("line \(index + 1): seq \(seq) after \(lastSeq)") }
            if line.headers["etag"] != "\"v\(seq)\"" { problems.append("line \(index + 1): etag \(line.headers["etag"] ?? "nil")") }
            if response.match.updatedAt == nil { problems.append("line \(index + 1): no updatedAt") }
            if response.match.id != id { problems.append("line \(index + 1): id \(response.match.id)") }
            if (response.retryAfterMs ?? 0) <= 0 { problems.append("line \(index + 1): no retryAfterMs") }
            lastSeq = seq
            statuses.append(response.match.status)
        }
        if statuses.first != .scheduled { problems.append("first status \(String(describing: statuses.first))") }
        if statuses.last?.isFinal != true { problems.append("last status \(String(describing: statuses.last))") }
        if statuses.dropLast().contains(where: \.isFinal) { problems.append("a final status before the last line") }
        // What an importer produces must also survive the recording file format unchanged.
        do {
            let parse = RecordingReader.read(try RecordingWriter.encode(lines))
            if !parse.problems.isEmpty || parse.lines != lines { problems.append("recording round trip: \(parse.problems)") }
        } catch {
            problems.append("recording write: \(error)")
        }
        return problems
    }
}
