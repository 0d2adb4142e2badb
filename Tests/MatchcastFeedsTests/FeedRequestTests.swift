import Testing

@testable import MatchcastFeeds

/// How every adapter reads a native request's path: the resource without its query, a query value, a schedule date.
@Suite("FeedRequest")
struct FeedRequestTests {
    @Test func theResourceIsThePathWithoutItsQuery() {
        #expect(FeedRequest(path: "/schedule?date=2026-04-21").resource == "/schedule")
        #expect(FeedRequest.liveMatches.resource == "/live-matches")
        #expect(FeedRequest(path: "/matches/nhl%3A1?x=1?y=2").resource == "/matches/nhl%3A1")
    }

    @Test func aQueryValueIsTheFirstOfItsNamePercentDecoded() {
        let request = FeedRequest(path: "/schedule?league=eng.1&date=2026%2D04%2D21&date=2026-04-22&flag")
        #expect(request.queryValue("date") == "2026-04-21")
        #expect(request.queryValue("league") == "eng.1")
        #expect(request.queryValue("flag") == "")
        #expect(request.queryValue("dat") == nil)
        #expect(FeedRequest(path: "/schedule").queryValue("date") == nil)
    }

    @Test(arguments: [("2026-04-21", true), ("2024-02-29", true), ("2026-4-21", false), ("2026-13-01", false),
                      ("2026-00-10", false), ("2026-04-32", false), ("2026/04/21", false), ("tomorrow", false), ("", false)])
    func aScheduleDateIsACalendarDate(_ text: String, _ valid: Bool) {
        #expect(FeedRequest.isCalendarDate(text) == valid)
    }
}
