extension Array {
    /// Makes room for `more` elements beyond `count`, growing as `append` does (at least doubling).
    ///
    /// `reserveCapacity(count + more)` allocates exactly what it is asked for, so a queue that calls it for every
    /// batch it takes moves all its elements to a new buffer every time: quadratic in the queue's length.
    @inlinable
    public mutating func reserveRoom(for more: Int) {
        let needed = count + more
        if needed > capacity { reserveCapacity(Swift.max(needed, 2 * capacity)) }
    }
}
