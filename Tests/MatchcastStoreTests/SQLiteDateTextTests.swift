import Foundation
import MatchcastCore
import Testing

@testable import MatchcastStore

/// The SQLite store writes dates' text itself (`SQLiteDateText`): it must be GRDB's, to the millisecond, or rows
/// written by the store would read back differently from rows GRDB wrote (and compare wrongly as text).
@Suite("SQLite date text: GRDB's, to the millisecond")
struct SQLiteDateTextTests {
    @Test("random and boundary dates from 1970 to 9999, whole and fractional seconds")
    func matchesGRDB() {
        var rng = SeededGenerator(seed: 11)
        var seconds: [Double] = [
            0, 0.0005, 0.001, 0.999, 0.9999, 1, 59.9995, 86_399.999, 86_400, 951_782_400.123 /* 2000-02-29 */,
            1_776_780_729.75, 1_776_780_729.0009, 4_107_542_400 /* 2100-03-01 */, 253_402_300_799.999,
            -0.001, -1, -86_400.5, -11_676_096_000,
        ]
        for _ in 0..<5_000 { seconds.append(Double.random(in: 0...253_402_300_799, using: &rng)) }
        for _ in 0..<5_000 { seconds.append(Double.random(in: 1_600_000_000...1_900_000_000, using: &rng)) }
        for _ in 0..<2_000 {
            seconds.append(Double(Int.random(in: 1_600_000_000_000...1_900_000_000_000, using: &rng)) / 1000)
        }
        for value in seconds {
            let date = Date(timeIntervalSince1970: value)
            #expect(SQLiteDateText.text(date) == SQLiteDateText.grdbText(date), "\(value)")
        }
        // Reading back what `MatchRecord` and the activity rows use: `Date.now`, as the store is given it.
        let now = Date()
        #expect(SQLiteDateText.text(now) == SQLiteDateText.grdbText(now))
    }
}
