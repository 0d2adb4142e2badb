import Foundation
import Synchronization

/// A wall clock that moves only when a test says so; starts at the real time, so a fake APNs
/// judging `iat` by the real clock agrees with it.
public final class WallClock: Sendable {
    private let date: Mutex<Date>

    public init(_ start: Date = Date()) {
        date = Mutex(start)
    }

    public var now: @Sendable () -> Date { { self.date.withLock { $0 } } }

    public func advance(seconds: TimeInterval) {
        date.withLock { $0 = $0.addingTimeInterval(seconds) }
    }
}
