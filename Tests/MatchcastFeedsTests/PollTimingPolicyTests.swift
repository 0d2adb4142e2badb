import Foundation
import MatchcastCore
import MatchcastFeeds
import Testing

@Suite("PollTimingPolicy")
struct PollTimingPolicyTests {
    let policy = Fixtures.policy
    let now = Fixtures.now

    private func interval(_ response: FeedResponse, body: Int? = nil, otherwise fallback: Duration? = nil) -> Duration {
        var rng = SeededGenerator(seed: 1)
        return policy.interval(for: response, bodyRetryAfterMs: body, now: now, otherwise: fallback, using: &rng)
    }

    // MARK: Precedence

    @Test func bodyRetryAfterMsWinsOverEveryHeader() {
        let response = FeedResponse(status: 200, headers: ["retry-after": "30", "cache-control": "max-age=40"])
        #expect(interval(response, body: 5_000) == .seconds(5))
    }

    @Test func retryAfterSecondsWinsOverMaxAge() {
        let response = FeedResponse(status: 200, headers: ["retry-after": "30", "cache-control": "max-age=40"])
        #expect(interval(response) == .seconds(30))
    }

    @Test func retryAfterHTTPDateIsRelativeToNow() {
        // Fixtures.now is 2026-04-21T15:12:09Z.
        let response = FeedResponse(status: 503, headers: ["retry-after": "Tue, 21 Apr 2026 15:12:21 GMT"])
        #expect(interval(response) == .seconds(12))
    }

    @Test func retryAfterDateInThePastClampsToTheMinimum() {
        let response = FeedResponse(status: 200, headers: ["retry-after": "Tue, 21 Apr 2026 15:00:00 GMT"])
        #expect(interval(response) == policy.minInterval)
    }

    @Test(arguments: [200, 304, 429, 503])
    func retryAfterCountsOn(status: Int) {
        let response = FeedResponse(status: status, headers: ["retry-after": "25", "cache-control": "max-age=40"])
        #expect(interval(response) == .seconds(25))
    }

    @Test(arguments: [" 25", "25\t", " \t25 \t"])
    func retryAfterIsReadWithoutTheWhitespaceAroundIt(value: String) {
        #expect(interval(FeedResponse(status: 200, headers: ["retry-after": value])) == .seconds(25))
    }

    @Test(arguments: [201, 404, 500, 502])
    func retryAfterIsIgnoredOn(status: Int) {
        let response = FeedResponse(status: status, headers: ["retry-after": "25", "cache-control": "max-age=40"])
        #expect(interval(response) == .seconds(40))
    }

    @Test(arguments: ["soon", "-5", "", "5.5", "Tue, 32 Apr 2026 15:00:00 GMT"])
    func unreadableRetryAfterFallsThroughToMaxAge(value: String) {
        let response = FeedResponse(status: 200, headers: ["retry-after": value, "cache-control": "max-age=40"])
        #expect(interval(response) == .seconds(40))
    }

    @Test(arguments: [
        ("max-age=15", 15), ("public, max-age=15", 15), ("no-cache, MAX-AGE = 15 , private", 15), ("max-age=\"15\"", 15),
        ("\tmax-age=\t15\t", 15), ("max-age= \"15\" ", 15),
    ])
    func maxAgeIsReadAmongOtherDirectives(header: String, seconds: Int) {
        #expect(interval(FeedResponse(status: 200, headers: ["cache-control": header])) == .seconds(seconds))
    }

    @Test(arguments: ["no-store", "max-age=soon", "s-maxage=30"])
    func cacheControlWithoutUsableMaxAgeGivesTheDefault(header: String) {
        #expect(interval(FeedResponse(status: 200, headers: ["cache-control": header])) == policy.defaultInterval)
    }

    @Test func nothingGivesTheDefault() {
        #expect(interval(FeedResponse(status: 200)) == .seconds(10))
    }

    @Test func fallbackIsUsedOnlyWhenTheResponseSaysNothing() {
        #expect(interval(FeedResponse(status: 304), otherwise: .seconds(7)) == .seconds(7))
        #expect(interval(FeedResponse(status: 304, headers: ["cache-control": "max-age=20"]), otherwise: .seconds(7)) == .seconds(20))
    }

    @Test func negativeBodyRetryAfterIsIgnored() {
        #expect(interval(FeedResponse(status: 200, headers: ["retry-after": "30"]), body: -1) == .seconds(30))
    }

    // MARK: Clamping

    @Test func requestsBelowTheMinimumAreRaised() {
        #expect(interval(FeedResponse(status: 200), body: 100) == .seconds(2))
        #expect(interval(FeedResponse(status: 200, headers: ["cache-control": "max-age=0"])) == .seconds(2))
    }

    @Test func requestsAboveTheMaximumAreLowered() {
        #expect(interval(FeedResponse(status: 200), body: 10_000_000) == .seconds(60))
        #expect(interval(FeedResponse(status: 503, headers: ["retry-after": "99999999999999999999"])) == .seconds(60))
    }

    @Test func initKeepsBoundsConsistent() {
        let odd = PollTimingPolicy(minInterval: .seconds(30), maxInterval: .seconds(5), jitter: 7, backoffBase: .seconds(10), backoffCap: .seconds(1))
        #expect(odd.maxInterval == .seconds(30))
        #expect(odd.jitter == 1)
        #expect(odd.backoffCap == .seconds(10))
        #expect(PollTimingPolicy(jitter: -.infinity).jitter == 0)
    }

    // MARK: Jitter

    @Test func jitterStaysWithinItsFraction() {
        var jittery = policy
        jittery.jitter = 0.1
        var seen = Set<Duration>()
        for seed in UInt64(0)..<500 {
            var rng = SeededGenerator(seed: seed)
            let delay = jittery.interval(for: FeedResponse(status: 200), bodyRetryAfterMs: 20_000, now: now, using: &rng)
            #expect(delay >= .seconds(18) && delay <= .seconds(22))
            seen.insert(delay)
        }
        #expect(seen.count > 100, "jitter should spread delays, got \(seen.count) distinct values")
    }

    @Test func jitterNeverGoesBelowTheMinimumAndAtMostJitterAboveTheMaximum() {
        var jittery = policy
        jittery.jitter = 0.5
        for seed in UInt64(0)..<500 {
            var rng = SeededGenerator(seed: seed)
            let low = jittery.interval(for: FeedResponse(status: 200), bodyRetryAfterMs: 0, now: now, using: &rng)
            #expect(low >= .seconds(2) && low <= .seconds(3))
            let high = jittery.interval(for: FeedResponse(status: 200), bodyRetryAfterMs: 1_000_000, now: now, using: &rng)
            #expect(high >= .seconds(30) && high <= .seconds(90))
        }
    }

    @Test func sameSeedSameDelay() {
        var jittery = policy
        jittery.jitter = 0.2
        var a = SeededGenerator(seed: 42)
        var b = SeededGenerator(seed: 42)
        for _ in 0..<20 {
            #expect(
                jittery.interval(for: FeedResponse(status: 200), bodyRetryAfterMs: nil, now: now, using: &a)
                    == jittery.interval(for: FeedResponse(status: 200), bodyRetryAfterMs: nil, now: now, using: &b))
        }
    }

    // MARK: Backoff

    @Test func backoffDoublesWithEqualJitter() {
        for failures in 1...4 {
            let step = Duration.seconds(4 << (failures - 1))  // 4, 8, 16, 32
            for seed in UInt64(0)..<100 {
                var rng = SeededGenerator(seed: seed)
                let delay = policy.backoff(consecutiveFailures: failures, using: &rng)
                #expect(delay >= step / 2 && delay <= step, "failure \(failures): \(delay)")
            }
        }
    }

    @Test(arguments: [5, 6, 7, 20, 63, 64, 1_000, Int.max])
    func backoffIsCapped(failures: Int) {
        for seed in UInt64(0)..<50 {
            var rng = SeededGenerator(seed: seed)
            let delay = policy.backoff(consecutiveFailures: failures, using: &rng)
            #expect(delay >= .seconds(32) && delay <= .seconds(64))
        }
    }

    @Test(arguments: [0, -3])
    func backoffTreatsNoFailuresAsTheFirst(failures: Int) {
        var rng = SeededGenerator(seed: 9)
        let delay = policy.backoff(consecutiveFailures: failures, using: &rng)
        #expect(delay >= .seconds(2) && delay <= .seconds(4))
    }

    @Test func backoffNeverGoesBelowTheMinimum() {
        let eager = PollTimingPolicy(minInterval: .seconds(3), backoffBase: .milliseconds(100), backoffCap: .seconds(1))
        for seed in UInt64(0)..<50 {
            var rng = SeededGenerator(seed: seed)
            #expect(eager.backoff(consecutiveFailures: 1, using: &rng) == .seconds(3))
        }
    }
}

/// HTTP-dates in `Retry-After`, read through the public policy: a date 100 s after `now` asks for 100 s.
@Suite("Retry-After HTTP-date")
struct HTTPDateTests {
    // 1994-11-06T08:49:37Z, RFC 9110's example.
    let date = Date(timeIntervalSince1970: 784_111_777)

    private func requested(_ text: String, now: Date) -> Duration? {
        Fixtures.policy.requestedInterval(for: FeedResponse(status: 503, headers: ["retry-after": text]), bodyRetryAfterMs: nil, now: now)
    }

    @Test(arguments: ["Sun, 06 Nov 1994 08:49:37 GMT", "Sunday, 06-Nov-94 08:49:37 GMT", "Sun Nov  6 08:49:37 1994"])
    func parsesAllThreeForms(text: String) {
        #expect(requested(text, now: date.addingTimeInterval(-100)) == .seconds(100))
    }

    @Test func readsLeapDaysAndSubSecondNows() {
        // 2024-02-29T00:00:00Z
        #expect(requested("Thu, 29 Feb 2024 00:00:00 GMT", now: Date(timeIntervalSince1970: 1_709_164_799.5)) == .milliseconds(500))
    }

    @Test(arguments: [
        "yesterday", "Sun, 06 Nov 1994 08:49:37 PST", "Sun, 06 Foo 1994 08:49:37 GMT", "Sun, 06 Nov 1994 25:49:37 GMT",
        "Sun, 06 Nov 1994 08:49 GMT",
    ])
    func ignoresAnythingElse(text: String) {
        #expect(requested(text, now: date) == nil)
    }
}
