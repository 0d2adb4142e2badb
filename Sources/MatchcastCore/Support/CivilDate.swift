/// Calendar dates from day counts, for the date texts Matchcast writes often (`JSON.formatDate`, the SQLite store's
/// dates), which Foundation's formatters make slowly.
public enum CivilDate {
    /// The proleptic Gregorian date `days` after 1970-01-01 (H. Hinnant's `civil_from_days`). Foundation's calendar
    /// counts Julian dates before 1582-10-15: callers keep to later dates.
    public static func from(daysSince1970 days: Int) -> (year: Int, month: Int, day: Int) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let shiftedMonth = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * shiftedMonth + 2) / 5 + 1
        let month = shiftedMonth < 10 ? shiftedMonth + 3 : shiftedMonth - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }

    /// Days from 1970-01-01 to the proleptic Gregorian date (H. Hinnant's `days_from_civil`).
    public static func daysSince1970(year: Int, month: Int, day: Int) -> Int {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    /// Days in `month` of `year`.
    public static func days(inMonth month: Int, of year: Int) -> Int {
        switch month {
        case 2: year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }

    /// `YYYY-MM-DD`, `separator`, `HH:MM:SS` for the day `days` after 1970-01-01 (after 1582, not past 9999) and
    /// `second` (0..<86,400) of it.
    public static func appendDateTime(days: Int, second: Int, separator: UInt8, to text: inout [UInt8]) {
        let date = from(daysSince1970: days)
        append(date.year, width: 4, then: UInt8(ascii: "-"), to: &text)
        append(date.month, width: 2, then: UInt8(ascii: "-"), to: &text)
        append(date.day, width: 2, then: separator, to: &text)
        append(second / 3600, width: 2, then: UInt8(ascii: ":"), to: &text)
        append(second / 60 % 60, width: 2, then: UInt8(ascii: ":"), to: &text)
        append(second % 60, width: 2, to: &text)
    }

    /// `value` (not negative) in `width` decimal digits, zero-padded, then `separator` if any.
    public static func append(_ value: Int, width: Int, then separator: UInt8? = nil, to text: inout [UInt8]) {
        var divisor = 1
        for _ in 1..<width { divisor *= 10 }
        while divisor > 0 {
            text.append(UInt8(ascii: "0") + UInt8(value / divisor % 10))
            divisor /= 10
        }
        if let separator { text.append(separator) }
    }
}
