import Foundation
import MatchcastCore
import MatchcastTesting
import Testing

@testable import MatchcastFeeds

/// The fake feed's native v1 API: routes, status codes, ETags, `retryAfterMs`, determinism.
@Suite("FakeFeed")
struct FakeFeedTests {
    private static func feed(seed: UInt64 = 1, speed: Double = 1, scenarios: [String]? = nil) throws -> FakeFeed {
        try FakeFeed(seed: seed, speed: speed, scenarios: scenarios)
    }

    /// Real time after which the feed is at simulated second `seconds`.
    private static func elapsed(simulated seconds: Double, speed: Double = 1) -> Duration {
        .milliseconds(Int64((seconds / speed * 1000).rounded(.up)))
    }

    private static func timelineBytes(_ feed: FakeFeed) throws -> Data {
        var bytes = Data()
        for timeline in feed.timelines {
            for entry in timeline.entries {
                bytes.append(Data("\(timeline.id) \(entry.time) ".utf8))
                bytes.append(try JSON.encoder().encode(entry.snapshot))
                bytes.append(0x0A)
            }
        }
        return bytes
    }

    // MARK: Determinism

    @Test func sameSeedGivesIdenticalTimelineBytes() throws {
        let first = try Self.timelineBytes(Self.feed(seed: 42))
        let second = try Self.timelineBytes(Self.feed(seed: 42))
        #expect(first == second)
        #expect(first.count > 100_000)
    }

    @Test func differentSeedsGiveDifferentMatches() throws {
        let one = try Self.feed(seed: 1)
        let two = try Self.feed(seed: 2)
        for name in FakeFeed.scenarioNames {
            let a = try #require(one.timeline(name))
            let b = try #require(two.timeline(name))
            #expect(a != b, "\(name) should differ between seeds")
        }
    }

    @Test func aScenarioDoesNotDependOnTheOthersRunAlongside() throws {
        let alone = try Self.feed(seed: 9, scenarios: ["tennis-bo3"])
        let together = try Self.feed(seed: 9)
        #expect(alone.timelines.map(\.id) == ["tennis-bo3"])
        #expect(alone.timeline("tennis-bo3") == together.timeline("tennis-bo3"))
    }

    @Test func sameRequestAtSameMomentGivesSameBytes() throws {
        let feed = try Self.feed(seed: 3, speed: 60)
        let twin = try Self.feed(seed: 3, speed: 60)
        for request in [FeedRequest.liveMatches, .match("cricket-t20"), .schedule(date: "2026-04-21")] {
            let moment = Duration.seconds(77)
            #expect(feed.response(to: request, elapsed: moment) == twin.response(to: request, elapsed: moment))
        }
    }

    // MARK: Configuration

    @Test func unknownScenarioIsAClearError() {
        #expect {
            _ = try FakeFeed(scenarios: ["cricket-t20", "curling"])
        } throws: { error in
            let error = try #require(error as? InputError)
            return error.field == "scenarios" && error.reason.contains("curling") && error.reason.contains("tennis-bo3")
        }
    }

    @Test(arguments: [0.0, -1.0, .infinity, .nan])
    func speedMustBePositive(_ speed: Double) {
        #expect(throws: InputError.self) { _ = try FakeFeed(speed: speed) }
    }

    @Test func scenarioNamesAreTheMatchIDs() throws {
        let feed = try Self.feed()
        #expect(feed.timelines.map(\.id) == FakeFeed.scenarioNames)
        for timeline in feed.timelines {
            #expect(timeline.entries.allSatisfy { $0.snapshot.id == timeline.id })
        }
    }

    // MARK: /matches/{id}

    @Test func matchAnswersTheContractShapeWithAnETag() throws {
        let feed = try Self.feed()
        let response = feed.response(to: .match("football"), elapsed: Self.elapsed(simulated: 600))
        #expect(response.status == 200)
        #expect(response.headers["content-type"] == "application/json")
        let decoded = try FeedDecoding.match(try #require(response.body))
        #expect(decoded.match.id == "football")
        #expect(decoded.match.status == .live)
        #expect(response.headers["etag"] == "\"v\(try #require(decoded.match.seq))\"")
        #expect(decoded.match == feed.timeline("football")?.snapshot(at: 600))
    }

    @Test func matchingIfNoneMatchGets304WithoutBody() throws {
        let feed = try Self.feed()
        let moment = Self.elapsed(simulated: 1_000)
        let first = feed.response(to: .match("cricket-t20"), elapsed: moment)
        let etag = try #require(first.headers["etag"])

        var conditional = FeedRequest.match("cricket-t20")
        conditional.headers["if-none-match"] = etag
        let second = feed.response(to: conditional, elapsed: moment)
        #expect(second.status == 304)
        #expect(second.body == nil)
        #expect(second.headers["etag"] == etag)

        // Once the match moves on, the old tag no longer matches.
        let later = feed.response(to: conditional, elapsed: Self.elapsed(simulated: 2_000))
        #expect(later.status == 200)
        #expect(later.headers["etag"] != etag)
    }

    @Test func weakAndListedTagsMatchToo() throws {
        let feed = try Self.feed()
        let moment = Self.elapsed(simulated: 1_000)
        let etag = try #require(feed.response(to: .match("tennis-bo3"), elapsed: moment).headers["etag"])
        let request = FeedRequest(path: "/matches/tennis-bo3", headers: ["if-none-match": "\"v0\", W/\(etag)"])
        #expect(feed.response(to: request, elapsed: moment).status == 304)
    }

    @Test func unknownMatchIs404WithAJSONError() throws {
        let feed = try Self.feed()
        let response = feed.response(to: .match("ipl-2026-m41"), elapsed: .zero)
        #expect(response.status == 404)
        #expect(response.headers["content-type"] == "application/json")
        let body = try #require(response.body)
        let object = try #require(try JSONSerialization.jsonObject(with: body) as? [String: [String: String]])
        #expect(object["error"]?["code"] == "not_found")
        #expect(object["error"]?["message"]?.contains("ipl-2026-m41") == true)
    }

    @Test func unknownPathIs404() throws {
        #expect(try Self.feed().response(to: FeedRequest(path: "/teams"), elapsed: .zero).status == 404)
    }

    // MARK: retryAfterMs

    @Test(arguments: [1.0, 10.0, 600.0])
    func retryAfterMsIsScaledBySpeed(_ speed: Double) throws {
        let feed = try Self.feed(speed: speed)
        func retryAfter(_ id: String, simulated: Double) throws -> Int? {
            let response = feed.response(to: .match(id), elapsed: Self.elapsed(simulated: simulated, speed: speed))
            return try FeedDecoding.match(try #require(response.body)).retryAfterMs
        }
        let expect = { (simulatedMs: Int) in max(1, Int((Double(simulatedMs) / speed).rounded())) }
        #expect(try retryAfter("football", simulated: 10) == expect(60_000))  // scheduled
        #expect(try retryAfter("football", simulated: 600) == expect(5_000))  // live

        let football = try #require(feed.timeline("football"))
        let halfTime = try #require(football.entries.first { $0.snapshot.status == .break })
        #expect(try retryAfter("football", simulated: halfTime.time + 60) == expect(30_000))
    }

    @Test func retryAfterMsIsNeverBelowOneMillisecond() throws {
        let feed = try Self.feed(speed: 1_000_000)
        let response = feed.response(to: .liveMatches, elapsed: .microseconds(600))
        #expect(try FeedDecoding.liveMatches(try #require(response.body)).retryAfterMs == 1)
    }

    // MARK: /live-matches

    @Test func liveMatchesListsWhatIsInPlay() throws {
        let feed = try Self.feed()
        func ids(atSimulated seconds: Double) throws -> [String] {
            let response = feed.response(to: .liveMatches, elapsed: Self.elapsed(simulated: seconds))
            #expect(response.status == 200)
            return try FeedDecoding.liveMatches(try #require(response.body)).matches.map(\.id)
        }
        #expect(try ids(atSimulated: 0) == [])
        #expect(try ids(atSimulated: FakeFeed.leadIn + 30) == FakeFeed.scenarioNames)

        // A finished match stays listed a few minutes, then leaves.
        let football = try #require(feed.timeline("football"))
        #expect(try ids(atSimulated: football.duration + 60).contains("football"))
        #expect(try !ids(atSimulated: football.duration + FakeFeed.recentlyFinishedWindow + 1).contains("football"))

        let end = feed.timelines.map(\.duration).max() ?? 0
        #expect(try ids(atSimulated: end + FakeFeed.recentlyFinishedWindow + 1) == [])
    }

    @Test func liveMatchesHasGeneratedAtAndAListETag() throws {
        let feed = try Self.feed(speed: 10)
        let moment = Self.elapsed(simulated: 1_000, speed: 10)
        let response = feed.response(to: .liveMatches, elapsed: moment)
        let decoded = try FeedDecoding.liveMatches(try #require(response.body))
        #expect(decoded.generatedAt == FakeFeed.epoch.addingTimeInterval(1_000))
        #expect(decoded.retryAfterMs == 500)
        #expect(decoded.failures.isEmpty)

        let etag = try #require(response.headers["etag"])
        let again = feed.response(to: FeedRequest(path: "/live-matches", headers: ["if-none-match": etag]), elapsed: moment)
        #expect(again.status == 304)
    }

    // MARK: /schedule

    @Test func scheduleListsEveryMatchOfTheDay() throws {
        let feed = try Self.feed()
        let response = feed.response(to: .schedule(date: "2026-04-21"), elapsed: .zero)
        #expect(response.status == 200)
        let decoded = try FeedDecoding.schedule(try #require(response.body))
        #expect(decoded.date == "2026-04-21")
        #expect(decoded.matches.map(\.id) == FakeFeed.scenarioNames)
        #expect(decoded.matches.allSatisfy { $0.status == .scheduled && $0.startsAt == FakeFeed.epoch.addingTimeInterval(FakeFeed.leadIn) })

        let otherDay = feed.response(to: .schedule(date: "2026-04-22"), elapsed: .zero)
        #expect(try FeedDecoding.schedule(try #require(otherDay.body)).matches.isEmpty)
    }

    @Test func scheduleWithoutAValidDateIs400() throws {
        let feed = try Self.feed()
        #expect(feed.response(to: FeedRequest(path: "/schedule"), elapsed: .zero).status == 400)
        #expect(feed.response(to: .schedule(date: "21/04/2026"), elapsed: .zero).status == 400)
    }

    // MARK: Pacing

    @Test func t20AtSpeed600FinishesWithinTwentyRealSeconds() throws {
        let feed = try Self.feed(speed: 600)
        let cricket = try #require(feed.timeline("cricket-t20"))
        #expect(cricket.duration / 600 < 20)
        let atEnd = feed.response(to: .match("cricket-t20"), elapsed: .seconds(20))
        #expect(try FeedDecoding.match(try #require(atEnd.body)).match.status == .completed)
    }

    @Test(arguments: UInt64(1)...5)
    func everyBodyDecodesWithTheBrokersDecoder(_ seed: UInt64) throws {
        let feed = try Self.feed(seed: seed)
        let end = feed.timelines.map(\.duration).max() ?? 0
        for timeline in feed.timelines {
            for entry in timeline.entries {
                let response = feed.response(to: .match(timeline.id), elapsed: Self.elapsed(simulated: entry.time))
                let decoded = try FeedDecoding.match(try #require(response.body))
                #expect(decoded.match == timeline.snapshot(at: entry.time))
            }
        }
        var moment = 0.0
        while moment <= end {
            let response = feed.response(to: .liveMatches, elapsed: Self.elapsed(simulated: moment))
            #expect(try FeedDecoding.liveMatches(try #require(response.body)).failures.isEmpty)
            moment += 300
        }
    }

    // MARK: FakeFeedTransport

    @Test func transportReadsElapsedTimeFromTheInjectedClock() async throws {
        let feed = try Self.feed(speed: 60)
        let clock = ManualClock()
        let transport = FakeFeedTransport(feed: feed, clock: clock)

        let before = try FeedDecoding.match(try #require(try await transport.fetch(.match("tennis-bo3")).body))
        #expect(before.match.status == .scheduled)

        clock.advance(by: .seconds(60))  // one simulated hour
        let during = try await transport.fetch(.match("tennis-bo3"))
        #expect(during == feed.response(to: .match("tennis-bo3"), elapsed: .seconds(60)))
        #expect(try FeedDecoding.match(try #require(during.body)).match.status == .live)
    }

    @Test func transportCanStartAtAGivenInstant() async throws {
        let feed = try Self.feed(speed: 600)
        let clock = ManualClock()
        let transport = FakeFeedTransport(feed: feed, clock: clock, start: clock.now.advanced(by: .seconds(-30)))
        let response = try await transport.fetch(.match("cricket-t20"))
        #expect(try FeedDecoding.match(try #require(response.body)).match.status == .completed)
    }
}
