import Foundation
import MatchcastCore
import MatchcastFeeds
import MatchcastTesting
import Synchronization
import Testing

/// A wall clock a test can move, for "today".
private final class WallClock: Sendable {
    private let date: Mutex<Date>
    init(_ date: Date) { self.date = Mutex(date) }
    var now: Date { date.withLock { $0 } }
    func set(_ newDate: Date) { date.withLock { $0 = newDate } }
}

@Suite("Schedule")
struct ScheduleTests {
    let ttl = ScheduleTTL(live: .seconds(30), upcoming: .seconds(300), final: .seconds(3600))

    @Test func ttlFollowsTheStateOfTheMatches() throws {
        func snapshots(_ statuses: [String]) throws -> [MatchSnapshot] {
            try FeedDecoding.schedule(Fixtures.scheduleBody(date: "2026-04-21", statuses.enumerated().map { Fixtures.snapshot(id: "m\($0.offset)", status: $0.element) })).matches
        }
        #expect(ttl.ttl(for: try snapshots(["scheduled", "live", "completed"])) == .seconds(30))
        #expect(ttl.ttl(for: try snapshots(["break"])) == .seconds(30))
        #expect(ttl.ttl(for: try snapshots(["completed", "abandoned"])) == .seconds(3600))
        #expect(ttl.ttl(for: try snapshots(["completed", "scheduled"])) == .seconds(300))
        #expect(ttl.ttl(for: try snapshots(["postponed"])) == .seconds(300))
        #expect(ttl.ttl(for: []) == .seconds(300))
    }

    @Test func theStepTimesSuccessByTTLAndFailureByBackoff() {
        var state = SchedulePollState(date: "2026-04-21", policy: Fixtures.policy, ttl: ttl)
        var rng = SeededGenerator(seed: 1)
        let live = state.ingest(
            Fixtures.ok(Fixtures.scheduleBody(date: "2026-04-21", [Fixtures.snapshot(id: "m1", status: "live")]), headers: ["etag": "\"s1\""]),
            now: Fixtures.now, using: &rng)
        #expect(live.delay == .seconds(30))
        #expect(state.nextRequest == FeedRequest(path: "/schedule?date=2026-04-21", headers: ["if-none-match": "\"s1\""]))
        let unchanged = state.ingest(FeedResponse(status: 304), now: Fixtures.now, using: &rng)
        #expect(unchanged.delay == .seconds(30))
        let failed = state.ingest(FeedResponse(status: 500), now: Fixtures.now, using: &rng)
        #expect(failed.delay >= .seconds(2) && failed.delay <= .seconds(4))
        #expect(state.schedule?.matches.map(\.id) == ["m1"])
    }

    @Test func aScheduleForAnotherDateIsRejected() {
        var state = SchedulePollState(date: "2026-04-21", policy: Fixtures.policy, ttl: ttl)
        var rng = SeededGenerator(seed: 1)
        let result = state.ingest(Fixtures.ok(Fixtures.scheduleBody(date: "2026-04-22", [])), now: Fixtures.now, using: &rng)
        guard case .failed(let error) = result.outcome else {
            Issue.record("expected a failure")
            return
        }
        #expect(error.inputError?.field == "date")
    }

    @Test func onlyTodayIsRePolled() async throws {
        let clock = ManualClock()
        let wall = WallClock(Fixtures.now)  // 2026-04-21
        let transport = ScriptedTransport { request in
            let date = String(request.path.split(separator: "=").last ?? "")
            let status = date == "2026-04-21" ? "live" : date < "2026-04-21" ? "completed" : "scheduled"
            return .response(Fixtures.ok(Fixtures.scheduleBody(date: date, [Fixtures.snapshot(id: "m-\(date)", status: status)])))
        }
        let source = ScheduleSource(transport: transport, clock: clock, policy: Fixtures.policy, ttl: ttl, now: { wall.now })
        #expect(await source.today == "2026-04-21")
        #expect(await source.nextPollDelay() == .zero)

        let today = try await source.load()
        #expect(today.date == "2026-04-21")
        let yesterday = try await source.schedule(for: "2026-04-20")
        #expect(yesterday.matches.first?.status == .completed)
        _ = try await source.schedule(for: "2026-04-22")
        #expect(transport.requests.count == 3)
        #expect(await source.nextPollDelay() == .seconds(30))

        // Within the TTL everything is served from the cache.
        clock.advance(by: .seconds(29))
        _ = try await source.load()
        _ = try await source.schedule(for: "2026-04-20")
        #expect(transport.requests.count == 3)

        // Past it, only today is fetched again; other dates never expire.
        clock.advance(by: .seconds(10_000))
        _ = try await source.load()
        _ = try await source.schedule(for: "2026-04-20")
        _ = try await source.schedule(for: "2026-04-22")
        #expect(transport.requests.map(\.path) == [
            "/schedule?date=2026-04-21", "/schedule?date=2026-04-20", "/schedule?date=2026-04-22", "/schedule?date=2026-04-21",
        ])

        // The day rolls over: the new today is fetched, yesterday's (formerly today) is now settled.
        wall.set(Fixtures.now.addingTimeInterval(86_400))
        #expect(await source.today == "2026-04-22")
        #expect(await source.nextPollDelay() == .zero)
        clock.advance(by: .seconds(10_000))
        _ = try await source.load()
        _ = try await source.schedule(for: "2026-04-21")
        #expect(transport.requests.count == 5)
        #expect(transport.requests.last?.path == "/schedule?date=2026-04-22")
    }

    @Test func forcedRefreshFetchesAnyDate() async throws {
        let transport = ScriptedTransport { request in
            .response(Fixtures.ok(Fixtures.scheduleBody(date: "2026-04-20", []), headers: ["etag": "\"d\""]))
        }
        let source = ScheduleSource(transport: transport, clock: ManualClock(), policy: Fixtures.policy, now: { Fixtures.now })
        _ = try await source.schedule(for: "2026-04-20")
        _ = try await source.refresh(date: "2026-04-20")
        #expect(transport.requests.count == 2)
        #expect(transport.requests.last?.headers["if-none-match"] == "\"d\"")
        #expect(await source.cached("2026-04-20")?.date == "2026-04-20")
    }

    @Test(arguments: ["2026-4-21", "tomorrow", "2026-04-21&x=1", ""])
    func malformedDatesAreRefusedWithoutAFetch(date: String) async {
        let transport = ScriptedTransport([])
        let source = ScheduleSource(transport: transport, clock: ManualClock(), now: { Fixtures.now })
        await #expect(throws: InputError.self) { try await source.schedule(for: date) }
        #expect(transport.requests.isEmpty)
    }

    @Test func failuresThrowAndKeepNothing() async {
        let transport = ScriptedTransport([.response(FeedResponse(status: 502))])
        let source = ScheduleSource(transport: transport, clock: ManualClock(), policy: Fixtures.policy, now: { Fixtures.now })
        await #expect(throws: FeedError.status(502, path: "/schedule?date=2026-04-21")) { try await source.load() }
        #expect(await source.cached("2026-04-21") == nil)
    }

    @Test func todayIsReckonedInTheConfiguredTimeZone() throws {
        // 15:12 UTC on the 21st is already the 22nd in Auckland (UTC+12).
        let auckland = try #require(TimeZone(identifier: "Pacific/Auckland"))
        #expect(ScheduleSource.dateString(for: Fixtures.now, in: auckland) == "2026-04-22")
        #expect(ScheduleSource.dateString(for: Fixtures.now, in: try #require(TimeZone(identifier: "UTC"))) == "2026-04-21")
    }
}
