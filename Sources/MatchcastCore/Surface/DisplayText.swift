/// Reading numbers back out of display strings (periods, clocks, overs), refusing anything unexpected.
///
/// Feeds put free text in `period` and `clock`, so every reader returns nil rather than guess, and caps the
/// digits it accepts so that no arithmetic on what it returns can overflow.
enum DisplayText {
    /// A non-negative number of at most `maxDigits` ASCII digits, and nothing else.
    static func number<S: StringProtocol>(_ text: S, maxDigits: Int = 4) -> Int? {
        let bytes = text.utf8
        guard !bytes.isEmpty, bytes.count <= maxDigits,
              bytes.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") })
        else { return nil }
        return bytes.reduce(0) { $0 * 10 + Int($1 - UInt8(ascii: "0")) }
    }

    /// Seconds in an `m:ss` / `mm:ss` clock ("09:03" is 543), or nil when the text is not one.
    static func clockSeconds(_ text: String) -> Int? {
        let parts = text.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 2, parts[1].utf8.count == 2,
              let minutes = number(parts[0], maxDigits: 3), let seconds = number(parts[1], maxDigits: 2), seconds < 60
        else { return nil }
        return minutes * 60 + seconds
    }

    /// The minute a football clock shows: "67'" and "67" are 67, stoppage time counts as the minute it is
    /// added to ("45+2'", "45'+2'" are 45), an elapsed "67:12" is 67. Nil for anything else.
    static func footballMinute(_ text: String) -> Int? {
        let digits = text.prefix { $0.isASCII && $0.isWholeNumber }
        guard let minute = number(digits, maxDigits: 3) else { return nil }
        let rest = text.dropFirst(digits.count)
        if rest.isEmpty || rest == "'" { return minute }
        if rest.first == "+" || rest.hasPrefix("'+") {
            let added = rest.drop { $0 == "'" || $0 == "+" }
            let addedDigits = added.hasSuffix("'") ? added.dropLast() : added
            return number(addedDigits, maxDigits: 2) == nil ? nil : minute
        }
        if rest.first == ":" { return clockSeconds(text) == nil ? nil : minute }
        return nil
    }
}
