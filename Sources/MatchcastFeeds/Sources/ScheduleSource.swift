import Foundation
import MatchcastCore

/// Schedules, `GET {base}/schedule?date=YYYY-MM-DD`, cached per date.
///
/// Only today's schedule (today by the injected wall clock, in `timeZone`) expires and is re-polled,
/// after a TTL chosen by its matches' state (`ScheduleTTL`). Any other date is fetched once and
/// then served from the cache: past days are settled and future days are re-read when they become
/// today. As a `DataSource` the value is today's schedule.
public actor ScheduleSource: PollingDataSource {
    public typealias Value = ScheduleResponse
    public typealias Outcome = SchedulePollOutcome

    private struct Entry {
        var state: SchedulePollState
        /// Elapsed time at which today's entry goes stale; nil until fetched.
        var due: Duration?
        var lastUsed: Duration
    }

    private var entries: [String: Entry] = [:]
    private let transport: any FeedTransport
    private let elapsed: ElapsedTime
    private let wallClock: @Sendable () -> Date
    private let policy: PollTimingPolicy
    private let ttl: ScheduleTTL
    private let timeZone: TimeZone
    private let maxCachedDates: Int
    private var rng: SeededGenerator

    /// - Parameters:
    ///   - clock: measures TTLs; a manual clock in tests.
    ///   - now: wall-clock time, which decides what "today" is (and reads `Retry-After` dates).
    ///   - timeZone: the zone in which "today" is reckoned; UTC by default.
    ///   - maxCachedDates: dates beyond this are evicted, least recently used first (never today).
    public init(
        transport: any FeedTransport,
        clock: any Clock<Duration> = ContinuousClock(),
        policy: PollTimingPolicy = PollTimingPolicy(),
        ttl: ScheduleTTL = ScheduleTTL(),
        timeZone: TimeZone = TimeZone(identifier: "UTC") ?? .current,
        seed: UInt64? = nil,
        maxCachedDates: Int = 31,
        now: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.transport = transport
        self.elapsed = ElapsedTime(clock)
        self.wallClock = now
        self.policy = policy
        self.ttl = ttl
        self.timeZone = timeZone
        self.maxCachedDates = max(1, maxCachedDates)
        self.rng = SeededGenerator(seed: seed ?? SourceSeed.seed(for: "/schedule"))
    }

    /// `YYYY-MM-DD` of `date` in `timeZone`.
    public static func dateString(for date: Date, in timeZone: TimeZone) -> String {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = timeZone
        let parts = calendar.dateComponents([.year, .month, .day], from: date)
        return String(format: "%04d-%02d-%02d", parts.year ?? 0, parts.month ?? 0, parts.day ?? 0)
    }

    /// Today's date, `YYYY-MM-DD`, by the injected wall clock.
    public var today: String { Self.dateString(for: wallClock(), in: timeZone) }

    /// The cached schedule for `date`, without fetching.
    public func cached(_ date: String) -> ScheduleResponse? {
        entries[date]?.state.schedule
    }

    /// The schedule for `date`: from the cache unless it is today's and its TTL has run out (or it was
    /// never fetched). Throws `InputError` for a date that is not `YYYY-MM-DD`, `FeedError` when a
    /// needed fetch fails.
    public func schedule(for date: String) async throws -> ScheduleResponse {
        try Self.validate(date)
        if let entry = entries[date], let schedule = entry.state.schedule {
            let fresh = date != today || entry.due.map { elapsed.now < $0 } ?? false
            if fresh {
                entries[date]?.lastUsed = elapsed.now
                return schedule
            }
        }
        return try await refresh(date: date)
    }

    /// Fetches `date` now, whatever the cache holds.
    public func refresh(date: String) async throws -> ScheduleResponse {
        try Self.validate(date)
        switch try await poll(date: date).outcome {
        case .updated(let schedule):
            return schedule
        case .unchanged:
            guard let schedule = entries[date]?.state.schedule else {
                throw FeedError.status(304, path: FeedRequest.schedule(date: date).path)
            }
            return schedule
        case .failed(let error):
            throw error
        }
    }

    /// Polls today's schedule.
    public func poll() async throws -> PollResult<SchedulePollOutcome> {
        try await poll(date: today)
    }

    /// Today's schedule, cache-first.
    public func load() async throws -> ScheduleResponse {
        try await schedule(for: today)
    }

    /// Today's schedule, fetched now.
    public func refresh() async throws -> ScheduleResponse {
        try await refresh(date: today)
    }

    /// Always: today keeps changing, and the day rolls over.
    public func shouldPoll() -> Bool { true }

    /// Until today's schedule goes stale; zero when it was never fetched (or the day just rolled over).
    public func nextPollDelay() -> Duration {
        guard let due = entries[today]?.due else { return .zero }
        return max(.zero, due - elapsed.now)
    }

    private func poll(date: String) async throws -> PollResult<SchedulePollOutcome> {
        var entry = entries[date] ?? Entry(state: SchedulePollState(date: date, policy: policy, ttl: ttl), lastUsed: elapsed.now)
        let answer = try await transport.answer(entry.state.nextRequest, path: entry.state.path)
        // Another call may have updated this date while the fetch was in flight; ingest into the latest state.
        entry = entries[date] ?? entry
        let result = entry.state.take(answer, now: wallClock(), using: &rng)
        entry.due = elapsed.now + result.delay
        entry.lastUsed = elapsed.now
        entries[date] = entry
        evict()
        return result
    }

    private func evict() {
        let keep = today
        while entries.count > maxCachedDates {
            guard let oldest = entries.filter({ $0.key != keep }).min(by: { $0.value.lastUsed < $1.value.lastUsed })?.key else {
                return
            }
            entries[oldest] = nil
        }
    }

    private static func validate(_ date: String) throws {
        let bytes = Array(date.utf8)
        let digits = [0, 1, 2, 3, 5, 6, 8, 9]
        guard bytes.count == 10, bytes[4] == UInt8(ascii: "-"), bytes[7] == UInt8(ascii: "-"),
            digits.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[$0]) })
        else {
            throw InputError(field: "date", reason: "expected YYYY-MM-DD, got '\(date.prefix(40))'")
        }
    }
}
