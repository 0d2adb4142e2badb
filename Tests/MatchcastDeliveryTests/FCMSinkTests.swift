import AsyncHTTPClient
import Foundation
import MatchcastCore
import MatchcastDelivery
import MatchcastTesting
import Synchronization
import Testing

/// The FCM sink against a fake FCM on a loopback port that verifies every assertion, access token and message:
/// what a match's pushes become, ordering, and what each answer does. Retry sleeps go through an injected clock.
@Suite("FCM sink", .timeLimit(.minutes(2)))
struct FCMSinkTests {
    private typealias F = FCMFixture

    /// 2026-04-21T15:12:09Z: the wall clock of these tests, and the pushes' timestamp.
    private static let t = 1_776_784_329

    private static func wallClock() -> WallClock { WallClock(Date(timeIntervalSince1970: TimeInterval(t))) }

    @Test func aMatchArrivesAsTheDocumentedDataMessages() async throws {
        let wallClock = Self.wallClock()
        let match = F.FootballMatch(timestamp: Self.t)
        let deadLetters = InMemoryDeadLetters()
        try await F.withServer(now: wallClock.now) { server, client in
            let sink = try F.sink(server: server, client: client, wallClock: wallClock, deadLetters: deadLetters)
            #expect(sink.name == "fcm")
            // One push per deliver call: the attributes of the start are remembered for the later ones.
            for delivery in match.deliveries { try await sink.deliver([delivery]) }

            let messages = server.messages
            #expect(server.problems.isEmpty)
            try #require(messages.count == 4)
            #expect(messages.allSatisfy { $0.token == F.registrationToken })
            #expect(messages.allSatisfy { $0.collapseKey == "mc-epl-2026-ars-che" })
            #expect(messages.map(\.priority) == ["HIGH", "HIGH", "HIGH", "HIGH"], "routine updates too")
            // Until the stale date (300 s after now), and 8 hours for the end.
            #expect(messages.map(\.ttl) == ["300s", "300s", "300s", "28800s"])
            #expect(messages.allSatisfy { $0.data.keys.allSatisfy { $0.hasPrefix("mc_") } })
            let data = messages.map(\.data)
            #expect(data.map { $0["mc_v"] } == ["1", "1", "1", "1"])
            #expect(data.map { $0["mc_event"] } == ["start", "update", "update", "end"])
            #expect(data.map { $0["mc_match"] } == Array(repeating: "epl-2026-ars-che", count: 4))
            #expect(data.map { $0["mc_title"] } == Array(repeating: "Arsenal v Chelsea", count: 4))
            #expect(data.map { $0["mc_sport"] } == Array(repeating: "football", count: 4))
            #expect(data.allSatisfy { $0["mc_sub"]?.hasPrefix("Premier League · ") == true })
            #expect(data.map { $0["mc_alert"] } == ["1", "0", "1", "1"])
            #expect(data.map { $0["mc_final"] } == ["0", "0", "0", "1"])
            #expect(data.map { $0["mc_ts"] } == (0..<4).map { String(Self.t + $0) })
            #expect(data.map { $0["mc_score"] } == match.deliveries.map { $0.payload.aps.contentState.summary })
            #expect(data.map { $0["mc_stale"] } == [String(Self.t + 300), String(Self.t + 300), String(Self.t + 300), nil])
            #expect(data[3]["mc_dismiss"] == String(Self.t + 900))
            #expect(data[2]["mc_event_text"] == "Goal: Saka 67'")
            #expect(data[3]["mc_result"] == "Arsenal won 1-0")
            #expect(data[2]["mc_unit"] == "minutes")
            #expect(data[2]["mc_segments"] == "45,45")
            #expect(data[2]["mc_progress"] == "67")
            #expect(data[3]["mc_status"] == "completed")
            #expect(sink.answers.last(token: F.registrationToken)?.status == 200)
            #expect(server.grants == 1)
        }
        #expect(await deadLetters.entries.isEmpty)
    }

    @Test func withoutTheStartAnUpdateHasTheShortNames() async throws {
        let wallClock = Self.wallClock()
        let match = F.FootballMatch(timestamp: Self.t)
        try await F.withServer(now: wallClock.now) { server, client in
            let sink = try F.sink(server: server, client: client, wallClock: wallClock)
            try await sink.deliver([match.update])
            let data = try #require(server.messages.first?.data)
            #expect(data["mc_title"] == "ARS v CHE")
            #expect(data["mc_sport"] == nil)
        }
    }

    @Test func eachMatchInOrderWhileMatchesGoSideBySide() async throws {
        let wallClock = Self.wallClock()
        let matches = ["m-a", "m-b", "m-c"]
        let perMatch = matches.map { F.updates(15, matchId: $0, timestamp: Self.t) }
        // Interleaved, as a batch of several matches arrives.
        let batch = (0..<15).flatMap { index in perMatch.map { $0[index] } }
        let metrics = RecordingMetrics()
        try await F.withServer(now: wallClock.now) { server, client in
            server.script([.unavailable(retryAfter: nil), .ok, .internalError, .ok, .quotaExceeded(retryAfter: nil), .ok, .unavailable(retryAfter: nil)])
            let sink = try F.sink(server: server, client: client, wallClock: wallClock, metrics: metrics, maxConcurrentRequests: 3)
            try await sink.deliver(batch)
            #expect(server.problems.isEmpty)
            #expect(server.messages.count == 45)
            for match in matches {
                let stamps = server.messages.filter { $0.data["mc_match"] == match }.compactMap { $0.data["mc_ts"].flatMap(Int.init) }
                #expect(stamps == (0..<15).map { Self.t + $0 })
            }
            #expect(server.sendStatuses.filter { $0 != 200 }.count == 4)
        }
        #expect(metrics.counter("matchcast_deliveries_total", [("sink", "fcm"), ("outcome", "delivered")]) == 45)
        #expect(metrics.counter("matchcast_fcm_responses_total", [("status", "503"), ("reason", "UNAVAILABLE")]) == 2)
    }

    @Test func oneUpdateToSeveralTargetsIsOneMessage() async throws {
        let wallClock = Self.wallClock()
        let update = F.FootballMatch(timestamp: Self.t).update
        let copies = (0..<5).map { index in
            Delivery(id: "dlv_copy_\(index)", activityId: "act_\(index)",
                     target: PushTarget(kind: .updateToken, value: String(format: "%064x", index)), sharingWith: update)
        }
        let metrics = RecordingMetrics()
        try await F.withServer(now: wallClock.now) { server, client in
            let sink = try F.sink(server: server, client: client, wallClock: wallClock, metrics: metrics)
            try await sink.deliver(copies)
            #expect(server.messages.count == 1)
        }
        #expect(metrics.counter("matchcast_deliveries_total", [("sink", "fcm"), ("outcome", "delivered")]) == 5)
    }

    @Test func anErrorMixSettlesEveryDeliveryExactlyOnce() async throws {
        let wallClock = Self.wallClock()
        let matches = ["m-a", "m-b", "m-c", "m-d"]
        let batch = matches.flatMap { F.updates(10, matchId: $0, timestamp: Self.t) }
        let deadLetters = InMemoryDeadLetters()
        let metrics = RecordingMetrics()
        let clock = InstantClock()
        try await F.withServer(now: wallClock.now) { server, client in
            server.script([
                .quotaExceeded(retryAfter: "2"), .internalError, .invalidPayload, .unavailable(retryAfter: nil), .ok,
                .senderIdMismatch, .revokeAccessToken, .ok, .thirdPartyAuthError, .internalError, .quotaExceeded(retryAfter: nil),
            ])
            let sink = try F.sink(
                server: server, client: client, clock: clock, wallClock: wallClock, deadLetters: deadLetters, metrics: metrics,
                maxConcurrentRequests: 4)
            try await sink.deliver(batch)

            // Accepted by the fake, or dead-lettered: each delivery one way, once.
            let sent = server.messages.map { "\($0.data["mc_match"]!)#\($0.data["mc_ts"]!)" }
            let refused = await deadLetters.deliveries.map { "\($0.matchId)#\($0.payload.aps.timestamp)" }
            #expect(Set(sent).count == sent.count)
            #expect(Set(refused).count == refused.count)
            #expect(Set(sent).isDisjoint(with: refused))
            #expect(Set(sent).union(refused) == Set(batch.map { "\($0.matchId)#\($0.payload.aps.timestamp)" }))
            #expect(sent.count == 37)
            #expect(await deadLetters.entries.map(\.status).sorted() == [400, 401, 403])
            #expect(await deadLetters.entries.map { String($0.body.prefix(22)) }.sorted() == [
                "INVALID_ARGUMENT: Inva", "SENDER_ID_MISMATCH: Se", "THIRD_PARTY_AUTH_ERROR",
            ])
            // The 401 cost one grant more, however many sends in flight were refused with the revoked token; none was
            // sent with a token the fake had not granted.
            #expect(server.grants == 2)
            #expect(server.problems.allSatisfy { $0 == "access token revoked" })
            // Accepted, refused for good, the six scripted failures retried, and any refused with the revoked token.
            #expect(server.sendStatuses.count == 37 + 3 + 6 + server.problems.count)
            // A Retry-After of 2 s was waited out (the backoffs are 100 to 800 ms). The queues share the clock, which
            // records a sleep from the moment it is asked, so another queue's sleep just before may shorten the record.
            #expect(clock.sleeps.contains { $0 >= .seconds(1) }, "\(clock.sleeps)")
            #expect(sink.answers.last(token: F.registrationToken) != nil)
        }
        #expect(metrics.counter("matchcast_deliveries_total", [("sink", "fcm"), ("outcome", "delivered")]) == 37)
        #expect(metrics.counter("matchcast_deliveries_total", [("sink", "fcm"), ("outcome", "dead_letter")]) == 3)
        #expect(metrics.counter("matchcast_fcm_responses_total", [("status", "429"), ("reason", "QUOTA_EXCEEDED")]) == 2)
    }

    @Test func unregisteredMarksTheTokenDead() async throws {
        let wallClock = Self.wallClock()
        let match = F.FootballMatch(timestamp: Self.t)
        let deadLetters = InMemoryDeadLetters()
        let invalidTokens = InvalidTokens()
        let metrics = RecordingMetrics()
        try await F.withServer(now: wallClock.now) { server, client in
            server.script([.unregistered])
            let sink = try F.sink(
                server: server, client: client, wallClock: wallClock, deadLetters: deadLetters, invalidTokens: invalidTokens,
                metrics: metrics)
            try await sink.deliver(match.deliveries)
            #expect(server.sendStatuses == [404])
            #expect(await deadLetters.deliveries.map(\.id) == match.deliveries.map(\.id))
            #expect(await deadLetters.entries.allSatisfy { $0.status == 404 && $0.body.hasPrefix("UNREGISTERED") })
            let reports = await invalidTokens.reports
            #expect(reports.map(\.token) == [F.registrationToken])
            #expect(reports.map(\.reason) == ["UNREGISTERED"])
            let answer = try #require(sink.answers.last(token: F.registrationToken))
            #expect(answer.status == 404)
            #expect(answer.reason == "UNREGISTERED")

            // Later deliveries for the dead token are dead-lettered without a request, and reported no more.
            let later = F.updates(3, matchId: "epl-2026-ars-che", timestamp: Self.t + 10)
            try await sink.deliver(later)
            #expect(server.sendStatuses == [404])
            #expect(await deadLetters.deliveries.suffix(3).map(\.id) == later.map(\.id))
            #expect(await deadLetters.entries.last?.body.contains("UNREGISTERED") == true)
            #expect(await invalidTokens.reports.count == 1)
        }
        #expect(metrics.counter("matchcast_deliveries_total", [("sink", "fcm"), ("outcome", "invalid_token")]) == 7)
    }

    @Test func invalidArgumentKillsTheTokenOnlyWhenItIsAboutTheToken() async throws {
        let wallClock = Self.wallClock()
        let updates = F.updates(3, matchId: "m-a", timestamp: Self.t)
        try await F.withServer(now: wallClock.now) { server, client in
            // About the payload: that delivery is dead-lettered, the others go.
            server.script([.invalidPayload])
            let deadLetters = InMemoryDeadLetters()
            let invalidTokens = InvalidTokens()
            let sink = try F.sink(server: server, client: client, wallClock: wallClock, deadLetters: deadLetters, invalidTokens: invalidTokens)
            try await sink.deliver(updates)
            #expect(await deadLetters.deliveries.map(\.id) == [updates[0].id])
            #expect(server.messages.count == 2)
            #expect(await invalidTokens.reports.isEmpty)

            // About the token: everything meant for it is dead-lettered.
            server.script([.invalidToken])
            let otherLetters = InMemoryDeadLetters()
            let otherTokens = InvalidTokens()
            let other = try F.sink(server: server, client: client, wallClock: wallClock, deadLetters: otherLetters, invalidTokens: otherTokens)
            try await other.deliver(updates)
            #expect(await otherLetters.deliveries.map(\.id) == updates.map(\.id))
            #expect(await otherTokens.reports.map(\.reason) == ["INVALID_ARGUMENT"])
            #expect(server.messages.count == 2)
        }
    }

    @Test func a401GetsANewAccessTokenAndOneResend() async throws {
        let wallClock = Self.wallClock()
        try await F.withServer(now: wallClock.now) { server, client in
            let sink = try F.sink(server: server, client: client, wallClock: wallClock)
            let first = try await sink.accessTokens.token()
            server.script([.revokeAccessToken])
            try await sink.deliver(F.updates(1, matchId: "m-a", timestamp: Self.t))
            #expect(server.sendStatuses == [401, 200])
            #expect(server.grants == 2)
            #expect(server.messages.first?.accessToken != first.value)

            // Refused again with the new token: no resend loop, the delivery goes back to the caller.
            server.script([.revokeAccessToken, .revokeAccessToken])
            let undelivered = F.updates(1, matchId: "m-b", timestamp: Self.t)
            let error = try #require(await #expect(throws: FCMError.self) { try await sink.deliver(undelivered) })
            #expect(error.undelivered.map(\.id) == undelivered.map(\.id))
            #expect("\(error)".contains("401"))
            #expect(server.sendStatuses == [401, 200, 401, 401])
            #expect(server.grants == 3)
        }
    }

    @Test func exhaustedRetriesHandTheRestBackInOrder() async throws {
        let wallClock = Self.wallClock()
        let batch = F.updates(3, matchId: "m-a", timestamp: Self.t) + F.updates(2, matchId: "m-b", timestamp: Self.t)
        let deadLetters = InMemoryDeadLetters()
        let metrics = RecordingMetrics()
        let clock = InstantClock()
        try await F.withServer(now: wallClock.now) { server, client in
            server.script([.ok, .unavailable(retryAfter: nil), .unavailable(retryAfter: nil)])
            let sink = try F.sink(
                server: server, client: client, clock: clock, wallClock: wallClock, deadLetters: deadLetters, metrics: metrics,
                retry: RetryPolicy(maxAttempts: 2, initialBackoff: .milliseconds(100), jitter: 0), maxConcurrentRequests: 1)
            let error = try #require(await #expect(throws: FCMError.self) { try await sink.deliver(batch) })
            #expect(error.reason == "retries_exhausted")
            // m-a's first went; its second failed twice; the rest of m-a, and m-b never started, come back.
            #expect(server.messages.map { $0.data["mc_ts"] } == [String(Self.t)])
            #expect(error.undelivered.map(\.id) == batch.dropFirst().map(\.id))
            #expect(clock.sleeps == [.milliseconds(100)])
        }
        #expect(await deadLetters.entries.isEmpty)
        #expect(metrics.counter("matchcast_deliveries_total", [("sink", "fcm"), ("outcome", "failed")]) == 4)
    }

    @Test func aSurfaceTooLargeForFCMIsDeadLetteredUnsent() async throws {
        let wallClock = Self.wallClock()
        let huge = F.updates(1, matchId: String(repeating: "m", count: 5000), timestamp: Self.t)
        let fine = F.updates(1, matchId: "m-a", timestamp: Self.t)
        let deadLetters = InMemoryDeadLetters()
        try await F.withServer(now: wallClock.now) { server, client in
            let sink = try F.sink(server: server, client: client, wallClock: wallClock, deadLetters: deadLetters)
            try await sink.deliver(huge + fine)
            #expect(server.messages.map { $0.data["mc_match"] } == ["m-a"])
            #expect(server.sendStatuses == [200])
        }
        let entries = await deadLetters.entries
        #expect(entries.map { $0.deliveries.map(\.id) } == [huge.map(\.id)])
        #expect(entries.first?.status == 0)
        #expect(entries.first?.body.contains("FCM data") == true)
    }

    @Test func noAccessTokenLeavesTheDeliveriesWithTheCaller() async throws {
        let wallClock = Self.wallClock()
        let batch = F.updates(2, matchId: "m-a", timestamp: Self.t) + F.updates(2, matchId: "m-b", timestamp: Self.t)
        let deadLetters = InMemoryDeadLetters()
        try await F.withServer(now: wallClock.now) { server, client in
            server.scriptTokens([.invalidGrant])
            let sink = try F.sink(server: server, client: client, wallClock: wallClock, deadLetters: deadLetters, maxConcurrentRequests: 1)
            let error = try #require(await #expect(throws: FCMError.self) { try await sink.deliver(batch) })
            #expect(error.reason == "access_token_refused")
            #expect(error.undelivered.map(\.id) == batch.map(\.id))
            #expect(!sink.isHealthy)
            #expect(server.sendStatuses.isEmpty)
            try await sink.deliver(batch)
            #expect(sink.isHealthy)
            #expect(server.messages.count == 4)
        }
        #expect(await deadLetters.entries.isEmpty)
    }

    @Test func oneTokenExchangeServesManyConcurrentSendsAndIsRenewedBeforeExpiry() async throws {
        let wallClock = Self.wallClock()
        try await F.withServer(expiresIn: 120, now: wallClock.now) { server, client in
            server.delayTokenAnswers(by: .milliseconds(200))
            let sink = try F.sink(server: server, client: client, wallClock: wallClock, maxConcurrentRequests: 8)
            func round(_ n: Int) -> [Delivery] {
                (0..<8).flatMap { F.updates(1, matchId: "m-\(n)-\($0)", timestamp: Self.t + n) }
            }
            try await sink.deliver(round(0))
            #expect(server.grants == 1)
            wallClock.advance(seconds: 30)
            try await sink.deliver(round(1))
            #expect(server.grants == 1)
            // Past half the life of 120 s: renewed once, for all eight sends.
            wallClock.advance(seconds: 31)
            try await sink.deliver(round(2))
            #expect(server.grants == 2)
            // Past its expiry: never sent expired, renewed first.
            wallClock.advance(seconds: 200)
            try await sink.deliver(round(3))
            #expect(server.grants == 3)
            #expect(server.messages.count == 32)
            #expect(server.sendStatuses.allSatisfy { $0 == 200 })
            #expect(server.problems.isEmpty)
        }
    }

    @Test func flushWaitsUntilEverythingHandedOverHasLeft() async throws {
        let wallClock = Self.wallClock()
        let clock = ManualClock()
        try await F.withServer(now: wallClock.now) { server, client in
            server.script([.unavailable(retryAfter: nil)])
            let sink = try F.sink(server: server, client: client, clock: clock, wallClock: wallClock)
            try await sink.flush()
            let flushed = Flag()
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { try await sink.deliver(F.updates(1, matchId: "m-a", timestamp: Self.t)) }
                // The send is waiting out its backoff.
                await clock.waitForSleepers(count: 1)
                group.addTask {
                    try await sink.flush()
                    flushed.set()
                }
                await Task.yield()
                #expect(!flushed.isSet)
                #expect(server.messages.isEmpty)
                clock.advance(by: .seconds(1))
                try await group.waitForAll()
            }
            #expect(flushed.isSet)
            #expect(server.messages.count == 1)
        }
    }

    @Test func logsAndErrorsNeverShowTokensOrKeys() async throws {
        let wallClock = Self.wallClock()
        let captured = CapturedLog()
        try await F.withServer(now: wallClock.now) { server, client in
            server.script([.internalError, .revokeAccessToken, .senderIdMismatch, .unregistered])
            let sink = try F.sink(server: server, client: client, wallClock: wallClock, logger: captured.logger)
            let first = try await sink.accessTokens.token()
            try await sink.deliver(F.updates(6, matchId: "m-a", timestamp: Self.t))
            let second = try await sink.accessTokens.token()
            #expect(second != first)
            server.scriptTokens([.invalidGrant])
            _ = try? await sink.accessTokens.refresh(rejecting: second)
            let secrets = [F.registrationToken, first.value, second.value, String(F.key.pkcs8PEMRepresentation.split(separator: "\n")[1])]
            #expect(captured.all.count > 4)
            for line in captured.all + ["\(sink.configuration)", "\(sink.account)", sink.accessTokens.lastFailure ?? ""] {
                for secret in secrets { #expect(!line.contains(secret)) }
            }
        }
    }
}

/// A flag one task sets and another reads.
private final class Flag: Sendable {
    private let value = Mutex(false)
    func set() { value.withLock { $0 = true } }
    var isSet: Bool { value.withLock { $0 } }
}
