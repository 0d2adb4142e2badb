import Foundation

/// The priority-10 pushes a match's activities were sent in the last hour, and what that leaves for the next key event.
///
/// iOS spends a budget (per device, undocumented, smaller without `NSSupportsLiveActivitiesFrequentUpdates`) on every
/// priority-10 ActivityKit push; once it is spent, updates are delayed or dropped without an error. Priority 5 costs
/// nothing. So key events go at 10 while the match's activities have had fewer than the ceiling of priority-10 pushes
/// in the last 60 minutes, and at 5 after that, until the oldest drops out of the hour. Routine updates always go at 5.
///
/// The ceiling holds per activity. The decision is made once per update of the match, for all its activities: every
/// open activity of a match is sent the same key events at the same priority (they skip the coalescing that makes
/// routine ones differ), so an activity's own priority-10 pushes are those of the match's that went out since it
/// started (`count(at:since:)`), never more than the match's, and one payload serves every follower. The final goes
/// at 10 whatever the ledger says, since a delayed end leaves a finished match showing as live, and is counted.
public struct HighPriorityLedger: Sendable, Hashable {
    /// The window the ceiling applies to.
    public static let window: Int = 3600

    /// Unix seconds of each priority-10 push within the window of the latest, oldest first.
    public private(set) var sends: [Int]

    public init(sends: [Int] = []) {
        self.sends = sends.sorted()
    }

    /// How many priority-10 pushes went out in the hour up to `now`.
    public func count(at now: Date) -> Int {
        sends.count - (firstInWindow(at: now) ?? sends.count)
    }

    /// How many priority-10 pushes of the hour up to `now` went out at or after `start`: what an activity of the match
    /// started then has had of them at most (one without an update token yet holds them, and is sent the latest at
    /// priority 5 when its token comes). None before it started (`start` nil).
    public func count(at now: Date, since start: Date?) -> Int {
        guard let start, let first = firstInWindow(at: now) else { return 0 }
        let from = Self.second(start)
        return sends[first...].reduce(0) { $0 + ($1 >= from ? 1 : 0) }
    }

    /// When the oldest push of the hour leaves it, making room for one more; nil when the hour is empty.
    public func nextRoom(at now: Date) -> Date? {
        firstInWindow(at: now).map { Date(timeIntervalSince1970: TimeInterval(sends[$0] + Self.window)) }
    }

    /// The index of the oldest push in the hour up to `now`.
    private func firstInWindow(at now: Date) -> Int? {
        let since = Self.second(now) - Self.window
        return sends.firstIndex { $0 > since }
    }

    private static func second(_ date: Date) -> Int { Int(date.timeIntervalSince1970.rounded(.down)) }

    /// The priority the pushes of an update go at (its match over or not, with key events or not), recorded when it is
    /// 10: a final goes at 10 always, key events while fewer than `ceiling` went out in the hour, everything else at 5.
    public mutating func priority(isFinal: Bool, hasKeyEvents: Bool, at now: Date, ceiling: Int) -> Int {
        guard isFinal || hasKeyEvents else { return 5 }
        guard isFinal || count(at: now) < ceiling else { return 5 }
        record(at: now)
        return 10
    }

    /// A priority-10 push went out at `now`; pushes older than the window are let go.
    public mutating func record(at now: Date) {
        let second = Self.second(now)
        sends.removeAll { $0 <= second - Self.window }
        let at = sends.lastIndex { $0 <= second }.map { $0 + 1 } ?? 0
        sends.insert(second, at: at)
    }
}
