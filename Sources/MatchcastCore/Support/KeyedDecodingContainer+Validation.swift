extension KeyedDecodingContainer {
    /// A string that must not be empty or only white space.
    func decodeNonEmpty(_ type: String.Type, forKey key: Key) throws -> String {
        let value = try decode(String.self, forKey: key)
        guard !value.allSatisfy(\.isWhitespace) else {
            throw DecodingError.dataCorruptedError(forKey: key, in: self, debugDescription: "must not be empty")
        }
        return value
    }

    /// A non-negative count, optionally bounded.
    func decodeCount(forKey key: Key, in range: ClosedRange<Int> = 0...1_000_000) throws -> Int {
        let value = try decode(Int.self, forKey: key)
        guard range.contains(value) else {
            throw DecodingError.dataCorruptedError(
                forKey: key, in: self, debugDescription: "must be in \(range.lowerBound)...\(range.upperBound), got \(value)")
        }
        return value
    }
}
