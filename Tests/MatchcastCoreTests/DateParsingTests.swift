import Foundation
import Testing
@testable import MatchcastCore

@Suite("Dates read as Foundation reads them")
struct DateParsingTests {
    @Test("whole-second UTC dates read from their digits give Foundation's date; anything else is Foundation's to read")
    func wholeSecondsUTC() {
        var rng = SeededGenerator(seed: 3)
        var texts = ["2026-04-21T15:12:09Z", "2000-02-29T00:00:00Z", "1600-01-01T00:00:00Z", "9999-12-31T23:59:59Z",
                     "1970-01-01T00:00:00Z", "2024-02-29T12:00:00Z"]
        for _ in 0..<3_000 {
            let seconds = Double(Int64.random(in: -11_676_096_000...253_402_300_799, using: &rng))
            texts.append(JSON.formatDate(Date(timeIntervalSince1970: seconds)))
        }
        for text in texts {
            let fast = JSON.parseWholeSecondsUTC(text)
            #expect(fast != nil, "\(text)")
            #expect(fast == (try? Date(text, strategy: .iso8601)), "\(text)")
        }
        // Not this form, or out of range: left to Foundation (which reads some of them and refuses others).
        for text in ["2023-02-29T00:00:00Z", "2026-13-01T00:00:00Z", "2026-04-31T10:00:00Z", "2026-04-21T24:00:00Z",
                     "2026-04-21T23:60:00Z", "2026-04-21T23:59:60Z", "2026-04-21t15:12:09z", "2026-04-21T15:12:09+00:00",
                     "2026-04-21T15:12:09.5Z", "1500-01-01T00:00:00Z", "2026-04-21 15:12:09Z", "+026-04-21T15:12:09Z",
                     "2026-4-21T15:12:09Z", ""] {
            #expect(JSON.parseWholeSecondsUTC(text) == nil, "\(text)")
        }
    }
}
