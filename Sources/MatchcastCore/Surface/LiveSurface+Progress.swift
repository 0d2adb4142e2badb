extension LiveSurface {
    /// How far a match has gone, in the shape Android's `Notification.ProgressStyle` draws: a bar made of
    /// segments, a position on it, and points marking where each completed segment ends.
    ///
    /// Football is two segments of 45 minutes, a T20 chase two of 120 balls, baseball nine innings of six
    /// outs. The rules per sport, and when there is none (nil), are in `init(contentState:sport:)`.
    public struct Progress: Sendable, Hashable, Codable {
        /// What one step of the bar counts.
        public enum Unit: String, Sendable, Hashable, Codable, CaseIterable {
            case minutes
            case balls
            case outs
            case sets
            /// Whole periods (quarters or halves) when their length is not known.
            case periods
            /// The whole match as one segment: a finished match whose shape is not known.
            case match
        }

        /// Segments kept at most: no match has more, and the total stays small.
        public static let maxSegments = 100
        /// The longest segment kept, in any unit.
        public static let maxSegmentLength = 100_000

        public var unit: Unit
        /// Length of each segment in `unit`s, in order; all positive.
        public private(set) var segments: [Int]
        /// Steps done, in 0...total.
        public private(set) var position: Int
        /// Positions to mark, ascending, in 1..<total: the ends of the segments already completed.
        public private(set) var points: [Int]

        /// The bar's length: the sum of the segments.
        public var total: Int { segments.reduce(0, +) }

        /// Whether the bar is full.
        public var isComplete: Bool { position == total }

        /// A bar with `segments`, `position` and `points`, made safe to draw: segments that are not positive
        /// are dropped (no segment left is no bar: one segment of 1), segments and their lengths are capped
        /// (`maxSegments`, `maxSegmentLength`), the position is clamped to the bar, and points off the bar's
        /// inside are dropped.
        public init(unit: Unit, segments: [Int], position: Int, points: [Int] = []) {
            var kept = segments.filter { $0 > 0 }.prefix(Self.maxSegments).map { min($0, Self.maxSegmentLength) }
            if kept.isEmpty { kept = [1] }
            self.unit = unit
            self.segments = kept
            let total = kept.reduce(0, +)
            self.position = min(max(position, 0), total)
            self.points = Array(Set(points.filter { $0 > 0 && $0 < total })).sorted()
        }

        /// A bar of `segments` at `position`, with a point at the end of every segment completed by then.
        static func marked(_ unit: Unit, _ segments: [Int], at position: Int) -> Progress {
            var bar = Progress(unit: unit, segments: segments, position: position)
            var ends: [Int] = []
            var end = 0
            for length in bar.segments.dropLast() {
                end += length
                if end <= bar.position { ends.append(end) }
            }
            bar.points = ends
            return bar
        }

        /// A full bar of `segments`: a finished match.
        static func finished(_ unit: Unit, _ segments: [Int]) -> Progress {
            marked(unit, segments, at: Int.max)
        }

        /// A finished match whose shape is not known.
        static let finishedMatch = finished(.match, [1])

        /// Removes the points: step 2 of the shortening rule.
        mutating func dropPoints() { points = [] }

        private enum CodingKeys: String, CodingKey { case unit, segments, position, points }

        public init(from decoder: any Decoder) throws {
            let c = try decoder.container(keyedBy: CodingKeys.self)
            self.init(
                unit: try c.decode(Unit.self, forKey: .unit), segments: try c.decode([Int].self, forKey: .segments),
                position: try c.decode(Int.self, forKey: .position),
                points: try c.decodeIfPresent([Int].self, forKey: .points) ?? [])
        }

        public func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(unit, forKey: .unit)
            try c.encode(segments, forKey: .segments)
            try c.encode(position, forKey: .position)
            try c.encode(points, forKey: .points)
        }
    }
}
