import Foundation
import MatchcastCore
@testable import MatchcastStore
import Testing

/// What replicas share on PostgreSQL beyond the contract suite: which matches need a replica, fenced saves, one
/// match's outbox, and the command inbox with its notification.
@Suite("PostgreSQL replica store", .enabled(if: PostgresTestServer.isConfigured, PostgresTestServer.skipMessage))
struct PostgresReplicaStoreTests {
    @Test("followed matches that are not over, matches with an open activity, a queued delivery or a channel need a replica")
    func matchesNeedingOwner() async throws {
        try await PostgresTestServer.withFreshStore { store in
            try await store.createDevice(StoreFixture.device("dev-a"))
            for match in ["m-live", "m-over", "m-unseen", "m-over-open"] {
                _ = try await store.addFollow(StoreFixture.follow("dev-a", match))
            }
            try await store.saveMatch(MatchRecord(snapshot: StoreFixture.football(.live, 0, 0, clock: "1'", id: "m-live"), updatedAt: StoreFixture.at(1)))
            try await store.saveMatch(MatchRecord(snapshot: StoreFixture.football(.completed, 1, 0, clock: "FT", id: "m-over"), updatedAt: StoreFixture.at(1)))
            try await store.saveMatch(MatchRecord(snapshot: StoreFixture.football(.completed, 1, 0, clock: "FT", id: "m-over-open"), updatedAt: StoreFixture.at(1)))
            try await store.saveActivity(StoreFixture.activity("act-open", match: "m-over-open", token: "tok-1"))
            try await store.saveActivity(StoreFixture.activity("act-ended", match: "m-over", token: "tok-2", ended: true))
            // Not followed, but an activity is still open (an end to deliver): needs a replica too.
            try await store.saveActivity(StoreFixture.activity("act-orphan", match: "m-unfollowed", token: "tok-3"))
            #expect(try await store.matchesNeedingOwner() == ["m-live", "m-over-open", "m-unfollowed", "m-unseen"])
            // Over, nothing open, but an `end` still queued (its replica died before sending it): needs one too.
            var end = Outbox.delivery("dlv-end", activity: "act-ended", .end)
            end.matchId = "m-over"
            try await store.saveActivities([], enqueue: [end])
            #expect(try await store.matchesNeedingOwner() == ["m-live", "m-over", "m-over-open", "m-unfollowed", "m-unseen"])
            // Over, nothing open or queued, but its broadcast channel not deleted yet: its owner must live on to delete it.
            let rendered = try MatchRenderer.render(StoreFixture.football(.completed, 2, 0, clock: "FT", id: "m-channel"))
            let channel = MatchChannel(
                matchId: "m-channel", channelId: "Y2gtMQ==", activityId: "act_ch_m-channel",
                current: MatchUpdate(rendered: rendered, content: rendered.contentState, keyEvents: [], pollInterval: .seconds(5)),
                now: StoreFixture.at(0), policy: StoreFixture.policy)
            try await store.saveChannel(MatchChannelRecord(channel: channel, updatedAt: StoreFixture.at(1)))
            #expect(try await store.matchesNeedingOwner().contains("m-channel"))
            try await store.deleteChannel(matchId: "m-channel")
            #expect(try await !store.matchesNeedingOwner().contains("m-channel"))
        }
    }

    @Test("a fenced save writes only under the lease it names")
    func fencedSave() async throws {
        try await PostgresTestServer.withFreshStore { store in
            try await store.createDevice(StoreFixture.device("dev-a"))
            let claimed = try #require(try await store.claim(matchId: "epl-mun-liv", owner: "a", ttl: .seconds(30)))
            let record = StoreFixture.activity("act-1", token: "tok-1")
            let update = Outbox.delivery("dlv-1", activity: "act-1", .update)
            let fence = LeaseFence(owner: "a", generations: ["epl-mun-liv": claimed.lease.generation])
            try await store.saveActivities([record], enqueue: [update], fence: fence)
            #expect(try await store.queuedDeliveries(matchId: "epl-mun-liv").map(\.id) == ["dlv-1"])
            #expect(try await store.queuedDeliveries(matchId: "another-match").isEmpty)

            // Another owner, or an older generation, writes nothing.
            let later = Outbox.delivery("dlv-2", activity: "act-1", .end)
            await #expect(throws: StoreError.leaseLost) {
                try await store.saveActivities([], enqueue: [later], fence: LeaseFence(owner: "b", generations: ["epl-mun-liv": claimed.lease.generation]))
            }
            try await store.release(matchId: "epl-mun-liv", owner: "a")
            _ = try #require(try await store.claim(matchId: "epl-mun-liv", owner: "b", ttl: .seconds(30)))
            await #expect(throws: StoreError.leaseLost) {
                try await store.saveActivities([], enqueue: [later], fence: fence)
            }
            #expect(try await store.queuedDeliveries(matchId: "epl-mun-liv").map(\.id) == ["dlv-1"])
        }
    }

    @Test("a posted command wakes a listener, stays pending until done, and keeps the owner's refusal")
    func commandInbox() async throws {
        try await PostgresTestServer.withFreshStore { store in
            let (woken, wake) = AsyncStream.makeStream(of: ReplicaSignal.self)
            let listener = Task { try await store.listen { wake.yield($0) } }
            defer { listener.cancel() }
            // LISTEN is in place once a probe comes back: post probes until one does.
            let prober = Task {
                while !Task.isCancelled {
                    _ = try await store.postCommand(MatchCommand(.unfollow, matchId: "probe", deviceId: "dev-a"))
                    try await Task.sleep(for: .milliseconds(100))
                }
            }
            var heard = woken.makeAsyncIterator()
            #expect(await heard.next() == .commandPosted(matchId: "probe"))
            prober.cancel()
            _ = await prober.result
            let first = try await store.postCommand(MatchCommand(.follow, matchId: "m1", deviceId: "dev-a", environment: .sandbox))
            var woke = false
            while let signal = await heard.next() {
                if signal == .commandPosted(matchId: "m1") { woke = true; break }
            }
            #expect(woke, "the owner is woken for m1")

            // A lease given up is heard too (a replica shutting down): the others take its match at once.
            _ = try await store.claim(matchId: "m3", owner: "replica-a", ttl: .seconds(30))
            #expect(try await store.release(matchId: "m3", owner: "replica-a"))
            var released = false
            while let signal = await heard.next() {
                if signal == .leaseReleased(matchId: "m3") { released = true; break }
            }
            #expect(released, "the release of m3 is heard")
            // Releasing what is not held tells nobody anything.
            #expect(try await store.release(matchId: "m3", owner: "replica-a") == false)

            let second = try await store.postCommand(MatchCommand(.dismiss, matchId: "m1", deviceId: "dev-a", activityId: "act-1"))
            _ = try await store.postCommand(MatchCommand(.unfollow, matchId: "m2", deviceId: "dev-a"))
            let pending = try await store.pendingCommands(matchIds: ["m1"])
            #expect(pending.map(\.id) == [first, second])
            #expect(pending.first?.command == MatchCommand(.follow, matchId: "m1", deviceId: "dev-a", environment: .sandbox))
            #expect(try await store.commandOutcome(id: first) == nil)

            try await store.completeCommand(id: first, refusal: nil)
            try await store.completeCommand(id: second, refusal: CommandRefusal(code: "forbidden", message: "not yours"))
            #expect(try await store.pendingCommands(matchIds: ["m1"]).isEmpty)
            #expect(try await store.commandOutcome(id: first) == CommandOutcome(refusal: nil))
            #expect(try await store.commandOutcome(id: second)?.refusal == CommandRefusal(code: "forbidden", message: "not yours"))
            try await store.forgetCommand(id: first)
            #expect(try await store.commandOutcome(id: first) == nil)
            #expect(try await store.commandOutcome(id: second) != nil)
            #expect(try await store.pendingCommands(matchIds: ["m2"]).count == 1)
            // Nothing is old enough yet; then everything is (done or pending alike).
            try await store.forgetCommands(postedBefore: .seconds(600))
            #expect(try await store.commandOutcome(id: second) != nil)
            try await store.forgetCommands(postedBefore: .seconds(-60))
            #expect(try await store.commandOutcome(id: second) == nil)
            #expect(try await store.pendingCommands(matchIds: ["m2"]).isEmpty)
        }
    }
}
