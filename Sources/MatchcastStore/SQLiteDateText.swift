import Foundation
import MatchcastCore
internal import GRDB

/// Every date the SQLite store writes: as GRDB stores it, `yyyy-MM-dd HH:mm:ss.SSS` in UTC (rounded to the nearest millisecond, as its formatter
/// rounds), so rows written here read back as those GRDB wrote. GRDB formats with a `DateFormatter`, which cost a
/// changed poll more than the rest of its match row; the text is written from the Gregorian calendar date here, and
/// GRDB's own formatting kept for dates outside 1970...9999.
enum SQLiteDateText {
    static func text(_ date: Date) -> String {
        let milliseconds = (date.timeIntervalSince1970 * 1000).rounded()
        guard milliseconds >= 0, milliseconds < 253_402_300_800_000 else { return grdbText(date) }
        let whole = Int(milliseconds)
        let (days, millisecondOfDay) = whole.quotientAndRemainder(dividingBy: 86_400_000)
        var text: [UInt8] = []
        text.reserveCapacity(23)
        CivilDate.appendDateTime(days: days, second: millisecondOfDay / 1000, separator: UInt8(ascii: " "), to: &text)
        text.append(UInt8(ascii: "."))
        CivilDate.append(millisecondOfDay % 1000, width: 3, to: &text)
        return String(decoding: text, as: UTF8.self)
    }

    /// GRDB's own text for `date`.
    static func grdbText(_ date: Date) -> String {
        guard case .string(let text) = date.databaseValue.storage else {
            preconditionFailure("GRDB stores dates as text")
        }
        return text
    }
}
