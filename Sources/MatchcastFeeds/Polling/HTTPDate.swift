import Foundation

/// HTTP-date (RFC 9110 §5.6.7): the IMF-fixdate every sender must use, plus the two obsolete
/// forms recipients must still accept. Hand-parsed so the result never depends on the locale
/// or on a formatter's leniency.
enum HTTPDate {
    private static let months = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]

    /// `Sun, 06 Nov 1994 08:49:37 GMT`, `Sunday, 06-Nov-94 08:49:37 GMT` or `Sun Nov  6 08:49:37 1994`.
    static func parse(_ text: String) -> Date? {
        let tokens = text.split(whereSeparator: { $0 == " " || $0 == "\t" }).map(String.init)
        switch tokens.count {
        case 6 where tokens[0].hasSuffix(","):
            // IMF-fixdate: day-name, DD Mon YYYY HH:MM:SS GMT
            guard tokens[5] == "GMT", let day = Int(tokens[1]), let year = Int(tokens[3]) else { return nil }
            return build(year: year, month: tokens[2], day: day, time: tokens[4])
        case 4 where tokens[0].hasSuffix(","):
            // RFC 850: day-name, DD-Mon-YY HH:MM:SS GMT
            let parts = tokens[1].split(separator: "-").map(String.init)
            guard tokens[3] == "GMT", parts.count == 3, let day = Int(parts[0]), let yy = Int(parts[2]) else { return nil }
            // Two-digit years: RFC 9110 says to read them as the most recent past year with those digits;
            // a fixed window (70-99 → 19xx) is the common reading and enough for a retry hint.
            let year = parts[2].count == 2 ? (yy >= 70 ? 1900 + yy : 2000 + yy) : yy
            return build(year: year, month: parts[1], day: day, time: tokens[2])
        case 5:
            // asctime: day-name Mon D HH:MM:SS YYYY
            guard let day = Int(tokens[2]), let year = Int(tokens[4]) else { return nil }
            return build(year: year, month: tokens[1], day: day, time: tokens[3])
        default:
            return nil
        }
    }

    private static func build(year: Int, month: String, day: Int, time: String) -> Date? {
        guard let monthIndex = months.firstIndex(of: month.lowercased()) else { return nil }
        let clock = time.split(separator: ":").compactMap { Int($0) }
        guard clock.count == 3, (0...23).contains(clock[0]), (0...59).contains(clock[1]), (0...60).contains(clock[2]),
            (1...31).contains(day), (1...9999).contains(year)
        else { return nil }
        let days = daysFromCivil(year: year, month: monthIndex + 1, day: day)
        let seconds = days * 86_400 + clock[0] * 3600 + clock[1] * 60 + clock[2]
        return Date(timeIntervalSince1970: TimeInterval(seconds))
    }

    /// Days since 1970-01-01 in the proleptic Gregorian calendar (Howard Hinnant's algorithm).
    private static func daysFromCivil(year: Int, month: Int, day: Int) -> Int {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let mp = (month + 9) % 12
        let doy = (153 * mp + 2) / 5 + day - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146_097 + doe - 719_468
    }
}
