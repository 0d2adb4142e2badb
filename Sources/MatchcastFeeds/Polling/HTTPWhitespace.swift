extension StringProtocol {
    /// The text without the spaces and tabs around it (RFC 9110's optional whitespace). Header values are read on
    /// every answer a feed gives, so this goes without Foundation's character sets, which cost a poll more than the
    /// rest of reading its headers.
    func trimmingHTTPWhitespace() -> SubSequence {
        trimming { $0 == " " || $0 == "\t" }
    }

    /// The text without the characters around it that `isTrimmed` names.
    func trimming(_ isTrimmed: (Character) -> Bool) -> SubSequence {
        guard let first = firstIndex(where: { !isTrimmed($0) }), let last = lastIndex(where: { !isTrimmed($0) }) else {
            return self[endIndex...]
        }
        return self[first...last]
    }
}
