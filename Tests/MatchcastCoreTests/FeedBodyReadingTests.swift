import Foundation
import Testing
@testable import MatchcastCore

// `FeedBodyReading` reads feed bodies without `Codable` and must never disagree with Foundation's decoder: whatever it
// reads, the decoder reads the same; whatever the decoder refuses, it leaves alone (nil). The documented shapes must
// take the fast path (or it would be a path nobody runs), and thousands of mutated bodies must keep the promise.

@Suite("Feed bodies read without Codable: Foundation's answers, or none")
struct FeedBodyReadingTests {
    /// Fails unless the fast reading is nil or the same as Foundation's; true when it read the body.
    @discardableResult
    static func expectAgreement(_ data: Data, sourceLocation: SourceLocation = #_sourceLocation) -> Bool {
        let slow = Result { () throws(InputError) in try FeedDecoding.decodedMatch(data) }
        guard let fast = FeedBodyReading.match(data) else { return false }
        switch slow {
        case .success(let slow):
            #expect(fast.match == slow.match, "\(String(decoding: data, as: UTF8.self))", sourceLocation: sourceLocation)
            #expect(fast.retryAfterMs == slow.retryAfterMs, sourceLocation: sourceLocation)
        case .failure(let error):
            Issue.record("read a body Foundation refuses (\(error)): \(String(decoding: data, as: UTF8.self))",
                         sourceLocation: sourceLocation)
        }
        return true
    }

    /// Every snapshot of `CanonicalJSONTests` in a match body, compact and pretty-printed, with and without
    /// `retryAfterMs`.
    static var bodies: [Data] {
        var bodies: [Data] = []
        for snapshot in CanonicalJSONTests.snapshots {
            let compact = String(decoding: CanonicalJSONWriter.encode(snapshot), as: UTF8.self)
            bodies.append(Data(#"{"retryAfterMs":1000,"match":\#(compact)}"#.utf8))
            bodies.append(Data(#"{"match":\#(compact)}"#.utf8))
            let pretty = JSON.encoder()
            pretty.outputFormatting = [.prettyPrinted, .withoutEscapingSlashes]
            let prettyText = String(decoding: try! pretty.encode(snapshot), as: UTF8.self)
            bodies.append(Data("{\n  \"match\" : \(prettyText),\r\n\t\"retryAfterMs\": null, \"extra\": [1, -2.5e3, {\"a\": [true, false, null]}, \"x\\/y\\n\"]\n}\n".utf8))
        }
        bodies.append(Data(SnapshotFixtures.contractMatchBody.utf8))
        return bodies
    }

    @Test("the documented shapes of every sport take the fast path and read as Foundation reads them")
    func documentedShapes() {
        for body in Self.bodies {
            #expect(Self.expectAgreement(body), "not read: \(String(decoding: body, as: UTF8.self))")
        }
    }

    @Test("values Foundation refuses or might read otherwise are left to it")
    func refusals() {
        let example = SnapshotFixtures.contractMatchBody
        let replacements: [(String, String)] = [
            (#""seq": 412"#, #""seq": 412.0"#), (#""seq": 412"#, #""seq": 4.12e2"#), (#""seq": 412"#, #""seq": "412""#),
            (#""seq": 412"#, #""seq": 99999999999999999999"#), (#""seq": 412"#, #""seq": 0412"#),
            (#""seq": 412"#, #""seq": -0"#), (#""id": "ipl-2026-m41""#, #""id": "   ""#),
            (#""id": "ipl-2026-m41""#, #""id": "\#(String(repeating: "x", count: 129))""#),
            (#""sport": "cricket""#, #""sport": "Cricket""#), (#""status": "live""#, #""status": null"#),
            (#""runs": 87"#, #""runs": -1"#), (#""wickets": 6"#, #""wickets": 11"#), (#""oversLimit": 20"#, #""oversLimit": 0"#),
            (#""startsAt": "2026-04-21T14:00:00Z""#, #""startsAt": "yesterday""#),
            (#""startsAt": "2026-04-21T14:00:00Z""#, #""startsAt": "2026-04-21T14:00:00.250Z""#),
            (#""venue": "Wankhede Stadium, Mumbai""#, #""venue": "Wankhede \u0053tadium""#),
            (#""venue": "Wankhede Stadium, Mumbai""#, #""venue": "tab\there""#),
            (#""competition": "IPL 2026""#, #""competition": "IPL 2026", "competition": "IPL""#),
            (#""competition": "IPL 2026""#, #""competition": "IPL 2026", "x": 1, "x": 2"#),
            (#""competition": "IPL 2026""#, #""competition": "IPL 2026", "x": 1e400, "y": -0.0e-0, "z": 123456789012345678901234567890"#),
            (#""competition": "IPL 2026""#, #""competition": "IPL 2026", "deep": \#(String(repeating: "[", count: 70))\#(String(repeating: "]", count: 70))"#),
            (#""competition": "IPL 2026""#, #""competition": "IPL 2026", "é": 1"#),
            (#""onStrike": true"#, #""onStrike": 1"#), (#""score": {"#, #""score": {"format": "odi", "#),
            (#""format": "t20""#, #""format": "T20""#),
        ]
        var readAny = false
        for (old, new) in replacements {
            precondition(example.contains(old), old)
            let body = Data(example.replacingOccurrences(of: old, with: new).utf8)
            readAny = Self.expectAgreement(body) || readAny
        }
        #expect(readAny, "some of these are plain enough to read (a repeated unknown key, an escaped venue)")
    }

    @Test("thousands of mutated bodies: whatever is read, Foundation reads the same")
    func mutations() {
        var rng = SeededGenerator(seed: 2026)
        let pieces: [[UInt8]] = [
            "null", "0", "-1", "1.5", "1e3", "true", "false", "\"\"", "\" \"", "{}", "[]", "\"x\"", ",", ":", "{", "}",
            "[", "]", "\"", "\\", "\\u00e9", "\\n", " ", "\u{0}", "é", "\"live\"", "\"H\"", "\"A\"", "3", "10", "7",
        ].map { Array($0.utf8) } + [[0xFF], [0xC3], [0x80]]
        var read = 0
        var total = 0
        for base in Self.bodies.map(Array.init) {
            for _ in 0..<60 {
                var bytes = base
                for _ in 0...Int.random(in: 0...2, using: &rng) {
                    let at = Int.random(in: 0..<bytes.count, using: &rng)
                    switch Int.random(in: 0..<4, using: &rng) {
                    case 0: bytes.remove(at: at)
                    case 1: bytes.insert(contentsOf: pieces.randomElement(using: &rng)!, at: at)
                    case 2: bytes.replaceSubrange(at..<min(bytes.count, at + Int.random(in: 1...6, using: &rng)),
                                                  with: pieces.randomElement(using: &rng)!)
                    default:
                        // A value swapped for another: the bytes after a colon up to the next comma or brace.
                        guard let colon = bytes[at...].firstIndex(of: UInt8(ascii: ":")) else { continue }
                        let end = bytes[(colon + 1)...].firstIndex { $0 == UInt8(ascii: ",") || $0 == UInt8(ascii: "}") } ?? bytes.count
                        bytes.replaceSubrange((colon + 1)..<end, with: pieces.randomElement(using: &rng)!)
                    }
                    if bytes.isEmpty { bytes = base }
                }
                total += 1
                if Self.expectAgreement(Data(bytes)) { read += 1 }
            }
        }
        // Most mutations break the body, but not all: some are read, so the comparison above ran on them.
        #expect(read > 0 && read < total, "\(read) of \(total) read")
    }

    @Test("a live list takes the fast path and reads as Foundation reads it; a bad match leaves it to Foundation")
    func liveList() throws {
        let matches = CanonicalJSONTests.snapshots.map { String(decoding: CanonicalJSONWriter.encode($0), as: UTF8.self) }
        let body = Data(#"{"retryAfterMs":5000,"generatedAt":"2026-04-21T15:12:09Z","matches":[\#(matches.joined(separator: ","))]}"#.utf8)
        let fast = try #require(FeedBodyReading.liveMatches(body))
        let slow = try FeedDecoding.decodedLiveMatches(body)
        #expect(fast.matches == slow.matches)
        #expect(fast.retryAfterMs == slow.retryAfterMs && fast.generatedAt == slow.generatedAt)
        #expect(slow.failures.isEmpty && fast.failures.isEmpty)
        let bad = Data(#"{"matches":[\#(matches[0]),{"id":"broken","sport":"curling"}]}"#.utf8)
        #expect(FeedBodyReading.liveMatches(bad) == nil)
        let decoded = try FeedDecoding.liveMatches(bad)
        #expect(decoded.matches.count == 1 && decoded.failures.count == 1)
    }
}

enum SnapshotFixtures {
    /// The contract's MatchSnapshot example (docs/formats.md, "Feed (native v1)") in a match body.
    static let contractMatchBody = #"{"retryAfterMs": 1000, "match": "# + FeedFixture.contractExample + "}"
}
