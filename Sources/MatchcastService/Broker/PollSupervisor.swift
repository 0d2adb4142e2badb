import Foundation
import Logging
import MatchcastCore
import MatchcastFeeds
import MatchcastStore
import ServiceLifecycle
import Synchronization

/// Polls each feed's live list always, and each followed match that is not final on its own source, each at
/// its server-driven interval. A match nobody follows is not polled on its own. Follows changing
/// start new sources; a source whose match ended or lost its followers stops after its next poll.
/// With several feeds, each live list runs on its own and a match's polls go to its feed (`FeedRouter`).
/// With `listServesMatches`, a feed's list that carries whole matches stands in for the own polls of the matches it
/// shows (`ListCoverage`): each such match is polled once on its own, then looks again at the list's interval.
public struct PollSupervisor: Service {
    private let service: LiveActivityService
    private let feeds: FeedRouter
    private let timing: PollTimingPolicy
    private let clock: any Clock<Duration>
    private let now: @Sendable () -> Date
    private let metrics: BrokerMetrics
    private let logger: Logger
    private let health: FeedHealth
    /// Where match polls run: each source on one event loop of the feed client's group.
    private let executors: EventLoopExecutor.Pool
    /// The match sources' poll metrics, made once.
    private let matchPolls: PollMetrics
    private let coverage: ListCoverage

    /// `executors`: the event loops of the feed's HTTP client, so a poll awaits its answer on the thread that reads it.
    /// `health` names the feeds in the order of `feeds.members`. `listServesMatches`: a live list that carries whole
    /// matches (`FeedRouter.Member.listCarriesWholeMatches`) serves the matches it shows, which are not polled on their own.
    public init(
        service: LiveActivityService, feeds: FeedRouter, timing: PollTimingPolicy,
        clock: any Clock<Duration>, now: @escaping @Sendable () -> Date, metrics: BrokerMetrics,
        health: FeedHealth, listServesMatches: Bool = false, executors: EventLoopExecutor.Pool = EventLoopExecutor.Pool(),
        logger: Logger
    ) {
        precondition(health.names.count == feeds.members.count, "one health entry per feed")
        self.service = service
        self.feeds = feeds
        self.timing = timing
        self.clock = clock
        self.now = now
        self.metrics = metrics
        self.health = health
        self.executors = executors
        matchPolls = metrics.polls(source: "match")
        coverage = ListCoverage(isEnabled: listServesMatches && feeds.members.contains(where: \.listCarriesWholeMatches))
        self.logger = logger
    }

    /// How often the followed matches are listed again besides at every follow change here: a source learns within
    /// this time that its match lost its followers through another replica's API.
    static let relistInterval: Duration = .seconds(30)

    /// How many matches of one live-list answer are ingested at a time.
    static let listIngestWidth = 32

    public func run() async throws {
        let running = RunningSources()
        let wantedMatches = WantedMatches()
        let changes = service.followChanges
        let polls = MatchPolls(
            running: running, wanted: wantedMatches, changes: changes, runs: PollRuns(),
            timer: (clock as? EventLoopClock).map { WheelPollTimer(clock: $0) } ?? SleepingPollTimer(clock: clock))
        await withDiscardingTaskGroup { group in
            for member in feeds.members.indices {
                group.addTask { await pollLiveList(member) }
            }
            group.addTask { await relistNow(and: wantedMatches, running: running, changes: changes) }
            // Sources already wanted at start (after a restart); then, at every follow change or claim, the matches it
            // names (everything again when this replica took matches over in bulk).
            var wakeUps = changes.wakeUps.cancelOnGracefulShutdown().makeAsyncIterator()
            var pending = FollowChanges.Pending()
            pending.relist = true
            repeat {
                pending = changes.take().merged(into: pending)
                let wanted: [String]
                if pending.relist {
                    do {
                        wanted = try await listWanted()
                        wantedMatches.replace(with: wanted)
                    } catch {
                        logger.error("cannot list followed matches", metadata: ["error": "\(error)"])
                        wanted = []
                    }
                } else {
                    wanted = await wantedAmong(pending, wanted: wantedMatches)
                }
                pending = FollowChanges.Pending()
                for matchId in wanted where running.insert(matchId) {
                    logger.info("polling match", metadata: ["match": "\(matchId)"])
                    let source = MatchSource(matchId: matchId, transport: feeds, clock: clock, policy: timing, now: now)
                    poll(MatchPoller(matchId: matchId, source: source, executor: executors.take()), polls)
                }
            } while await wakeUps.next() != nil
            await polls.timer.stop()
            await polls.runs.stop()
            group.cancelAll()
        }
    }

    /// What the matches' own polls share while the supervisor runs.
    private struct MatchPolls: Sendable {
        let running: RunningSources
        let wanted: WantedMatches
        let changes: FollowChanges
        let runs: PollRuns
        let timer: any PollTimer
    }

    /// Polls the match now, in a task on its event loop that lives for this poll alone; the next poll waits in
    /// `polls.timer`, with no task, until it is due. Polled until it is final, unwanted here, or the supervisor stops.
    private func poll(_ poller: MatchPoller, _ polls: MatchPolls) {
        let matchId = poller.matchId
        let started = polls.runs.start(on: poller.executor) {
            switch await step(poller, wanted: polls.wanted) {
            case .again(let delay) where !Task.isCancelled:
                polls.timer.schedule(after: delay, on: poller.executor) { poll(poller, polls) }
            case .again:
                polls.running.remove(matchId)
            case .ended(let unwanted):
                polls.running.remove(matchId)
                // Followed again between the source's last look and now: the change found it still running.
                if unwanted, !polls.runs.isStopped, polls.wanted.contains(matchId),
                   service.lifecycle.wantsSource(matchId: matchId) {
                    polls.changes.followed(matchId)
                }
            }
        }
        if !started { polls.running.remove(matchId) }
    }

    /// The matches `changes` names, each put in or taken out of `wanted`; returns those that want a source. A match
    /// unfollowed here may still have other followers, and one this replica claimed may have followers or none: one
    /// index probe of the store says (on failure it stays, or counts as followed).
    private func wantedAmong(_ changes: FollowChanges.Pending, wanted: WantedMatches) async -> [String] {
        let lifecycle = service.lifecycle
        var result: [String] = []
        for matchId in changes.followed.union(changes.unsure).sorted() {
            var followed = true
            if changes.unsure.contains(matchId) {
                do {
                    followed = try await lifecycle.isFollowed(matchId: matchId)
                } catch {
                    logger.warning("cannot read whether a match is followed", metadata: ["match": "\(matchId)", "error": "\(error)"])
                }
            }
            if followed, lifecycle.ownership.holds(matchId), lifecycle.wantsSource(matchId: matchId) {
                wanted.insert(matchId)
                result.append(matchId)
            } else if !followed {
                wanted.remove(matchId)
            }
        }
        return result
    }

    /// The followed matches that need a source, with replicas only those whose lease this replica holds.
    private func listWanted() async throws(ServiceError) -> [String] {
        let ownership = service.lifecycle.ownership
        return try await service.lifecycle.matchesToPoll().filter { ownership.holds($0) }
    }

    /// Lists the wanted matches every `relistInterval`, for the sources to look up after each poll (a follow change
    /// made meanwhile keeps its own answer for its match), and hands the supervisor any wanted match without a
    /// source: one whose listing failed at start, or a postponed match that the live list showed live again.
    private func relistNow(and wanted: WantedMatches, running: RunningSources, changes: FollowChanges) async {
        while (try? await cancelWhenGracefulShutdown({ try await clock.sleep(for: Self.relistInterval) })) != nil {
            let version = wanted.version
            guard let list = try? await listWanted() else { continue }
            wanted.replace(with: list, ifStill: version)
            for matchId in list where wanted.contains(matchId) && !running.contains(matchId) {
                changes.followed(matchId)
            }
        }
    }

    /// What one of a match's own polls leaves to do.
    private enum Step {
        /// Poll again after this long.
        case again(after: Duration)
        /// Stop polling the match: `unwanted` when it lost its followers here (or its lease), else final or cancelled.
        case ended(unwanted: Bool)
    }

    /// One poll of the match and what its answer asks for. Polled on its own until it has answered once: the list passes
    /// on only what changes, and this replica may have gained the match after the list last showed it changing.
    private func step(_ poller: MatchPoller, wanted: WantedMatches) async -> Step {
        let matchId = poller.matchId
        if poller.answered, let interval = coverage.interval(serving: matchId, from: feeds.member(serving: matchId)) {
            matchPolls.listed.increment()
            guard isStillWanted(matchId, wanted: wanted) else { return stopped(matchId, unwanted: true) }
            return .again(after: interval)
        }
        switch await handlePoll(matchId, poller.source) {
        case nil: return stopped(matchId, unwanted: false)
        case true?: poller.answered = true
        case false?: break
        }
        guard await poller.source.shouldPoll() else { return stopped(matchId, unwanted: false) }
        guard isStillWanted(matchId, wanted: wanted) else { return stopped(matchId, unwanted: true) }
        return .again(after: await poller.source.nextPollDelay())
    }

    private func stopped(_ matchId: String, unwanted: Bool) -> Step {
        logger.info("stopped polling match", metadata: ["match": "\(matchId)"])
        return .ended(unwanted: unwanted)
    }

    /// Polls the match once and acts on the answer: nil when the poll was cancelled, else whether the feed answered.
    private func handlePoll(_ matchId: String, _ source: MatchSource) async -> Bool? {
        guard let result = try? await source.poll() else { return nil }
        matchPolls.interval.record(result.delay.seconds)
        switch result.outcome {
        case .updated(let snapshot):
            matchPolls.updated.increment()
            health.succeeded(feeds.member(serving: matchId), at: now())
            do {
                try await ingest(snapshot, pollInterval: result.delay)
            } catch {
                logger.error("update failed", metadata: ["match": "\(matchId)", "error": "\(error)"])
            }
            return true
        case .unchanged:
            matchPolls.unchanged.increment()
            health.succeeded(feeds.member(serving: matchId), at: now())
            service.lifecycle.feedAnswered(matchId: matchId)
            return true
        case .stale:
            matchPolls.stale.increment()
            return false
        case .failed(let error):
            matchPolls.failed.increment()
            metrics.feedError(reason: error.reason)
            let member = feeds.member(serving: matchId)
            health.failed(member, at: now())
            logger.warning("poll failed", metadata: [
                "match": "\(matchId)", "feed": "\(member.map { feeds.members[$0].name } ?? "?")",
                "error": "\(error)", "retry_in": "\(result.delay)",
            ])
            return false
        }
    }

    /// A polled change, ingested in a child task on the global executor: a change may fan out to many activities,
    /// which must not run on the event loop.
    private func ingest(_ snapshot: MatchSnapshot, pollInterval: Duration) async throws {
        let lifecycle = service.lifecycle
        try await withThrowingDiscardingTaskGroup { group in
            group.addTask(executorPreference: globalConcurrentExecutor) {
                _ = try await lifecycle.ingest(snapshot, pollInterval: pollInterval)
            }
        }
    }

    /// Held here, still followed as last listed (no store read per poll), and neither final nor postponed.
    private func isStillWanted(_ matchId: String, wanted: WantedMatches) -> Bool {
        guard service.lifecycle.ownership.holds(matchId), wanted.contains(matchId) else { return false }
        return service.lifecycle.wantsSource(matchId: matchId)
    }

    /// With replicas, one polls the live list: the holder of its lease. The others wait and look again; meanwhile the
    /// list serves none of their matches.
    private func mayPollLiveList(_ member: Int) async -> Bool {
        let ownership = service.lifecycle.ownership
        while !ownership.isSolo && !ownership.holds(ReplicaCoordinator.liveListLease) {
            coverage.lapse(member)
            guard (try? await cancelWhenGracefulShutdown({ try await clock.sleep(for: .seconds(1)) })) != nil else { return false }
        }
        return true
    }

    /// A live-list snapshot: run by this replica when it runs the match; otherwise only kept as the match's latest
    /// state (for `GET /v1/matches`) when nobody has a newer one (the owner polls the match itself).
    private func ingestFromLiveList(_ snapshot: MatchSnapshot, pollInterval: Duration) async throws {
        if service.lifecycle.ownership.holds(snapshot.id) {
            try await service.lifecycle.ingest(snapshot, pollInterval: pollInterval)
            return
        }
        let stored = try await service.store.match(id: snapshot.id)
        if let stored, let old = stored.snapshot.seq, let new = snapshot.seq, new <= old { return }
        if let stored, stored.snapshot == snapshot { return }
        try await service.store.saveMatch(MatchRecord(snapshot: snapshot, updatedAt: now()))
    }

    /// The live list of the feed `member`, at its own interval.
    private func pollLiveList(_ member: Int) async {
        let feed = feeds.members[member]
        let source = LiveListSource(transport: feed.transport, clock: clock, policy: timing, now: now)
        let serves = coverage.isEnabled && feed.listCarriesWholeMatches
        while !Task.isCancelled && !Task.isShuttingDownGracefully {
            guard await mayPollLiveList(member), let result = try? await source.poll() else {
                coverage.lapse(member)
                return
            }
            metrics.pollInterval(source: "live-list", result.delay)
            switch result.outcome {
            case .updated(let update):
                metrics.poll(source: "live-list", outcome: "updated")
                health.succeeded(member, at: now())
                feeds.listed(update.matches.lazy.map(\.id), by: member)
                for failure in update.failures {
                    metrics.feedError(reason: "decode")
                    logger.warning("bad match in live list", metadata: ["feed": "\(feed.name)", "error": "\(failure)"])
                }
                // Each match on its own, a few at once: one match's fan-out does not hold back the next one's
                // change, and a first answer listing thousands of matches does not start thousands of ingests.
                await withTaskGroup(of: Void.self) { group in
                    var inFlight = 0
                    for snapshot in update.changed {
                        if inFlight == Self.listIngestWidth {
                            await group.next()
                            inFlight -= 1
                        }
                        group.addTask(executorPreference: globalConcurrentExecutor) {
                            do {
                                try await ingestFromLiveList(snapshot, pollInterval: result.delay)
                            } catch {
                                logger.error("update failed", metadata: ["match": "\(snapshot.id)", "error": "\(error)"])
                            }
                        }
                        inFlight += 1
                    }
                }
                if serves {
                    coverage.listed(Set(update.matches.lazy.map(\.id)), by: member, interval: result.delay)
                    answered(byListOf: member, except: Set(update.changed.lazy.map(\.id)))
                }
            case .unchanged:
                metrics.poll(source: "live-list", outcome: "unchanged")
                health.succeeded(member, at: now())
                if serves {
                    coverage.unchanged(member, interval: result.delay)
                    answered(byListOf: member, except: [])
                }
            case .failed(let error):
                coverage.lapse(member)
                metrics.poll(source: "live-list", outcome: "failed")
                metrics.feedError(reason: error.reason)
                health.failed(member, at: now())
                logger.warning("live list poll failed", metadata: [
                    "feed": "\(feed.name)", "error": "\(error)", "retry_in": "\(result.delay)",
                ])
            }
            guard (try? await cancelWhenGracefulShutdown({ try await clock.sleep(for: await source.nextPollDelay()) })) != nil
            else {
                coverage.lapse(member)
                return
            }
        }
    }

    /// The list of `member` answered for the matches it serves here (those held by this replica), besides the ones in
    /// `changed`, which their ingest marks: the feed is fresh for each, as a poll of its own would have said.
    private func answered(byListOf member: Int, except changed: Set<String>) {
        let lifecycle = service.lifecycle
        for matchId in coverage.ids(of: member) where !changed.contains(matchId) && lifecycle.ownership.holds(matchId) {
            lifecycle.feedAnswered(matchId: matchId)
        }
    }
}

/// The matches wanted as last listed, shared with the source tasks; `version` counts the changes put in.
final class WantedMatches: Sendable {
    private struct State {
        var ids: Set<String> = []
        var version = 0
        /// The version at which each match was last put in or taken out one by one (by a follow change).
        var changedAt: [String: Int] = [:]
        /// The version of the last whole list a follow change put in.
        var listedAt = 0
    }

    private let state = Mutex(State())

    var version: Int { state.withLock { $0.version } }

    func contains(_ id: String) -> Bool { state.withLock { $0.ids.contains(id) } }

    /// A whole list, read at a follow change: it goes in as it is.
    func replace(with ids: [String]) {
        state.withLock { state in
            state.version += 1
            state = State(ids: Set(ids), version: state.version, changedAt: [:], listedAt: state.version)
        }
    }

    /// A list read at `version` (the periodic one): dropped if a follow change put a whole list in since; otherwise it
    /// decides every match except those a follow change put in or took out since, which keep that answer.
    func replace(with ids: [String], ifStill version: Int) {
        state.withLock { state in
            guard state.listedAt <= version else { return }
            var merged = Set(ids.filter { (state.changedAt[$0] ?? 0) <= version })
            merged.formUnion(state.ids.filter { (state.changedAt[$0] ?? 0) > version })
            state.ids = merged
            state.version += 1
            state.changedAt = state.changedAt.filter { $0.value > version }
        }
    }

    /// One match in or out, by a follow change.
    func insert(_ id: String) {
        state.withLock { state in
            state.ids.insert(id)
            state.version += 1
            state.changedAt[id] = state.version
        }
    }

    func remove(_ id: String) {
        state.withLock { state in
            state.ids.remove(id)
            state.version += 1
            state.changedAt[id] = state.version
        }
    }
}

/// One match polled on its own: its source, the event loop its polls run on, and whether the feed has answered it yet.
final class MatchPoller: Sendable {
    let matchId: String
    let source: MatchSource
    let executor: EventLoopExecutor
    private let answeredOnce = Atomic(false)

    init(matchId: String, source: MatchSource, executor: EventLoopExecutor) {
        self.matchId = matchId
        self.source = source
        self.executor = executor
    }

    /// Read and set by the match's polls, one at a time.
    var answered: Bool {
        get { answeredOnce.load(ordering: .acquiring) }
        set { answeredOnce.store(newValue, ordering: .releasing) }
    }
}

/// Match ids with a running source, shared with the source tasks.
final class RunningSources: Sendable {
    private let ids = Mutex<Set<String>>([])

    /// True when the id was not running yet.
    func insert(_ id: String) -> Bool { ids.withLock { $0.insert(id).inserted } }
    func remove(_ id: String) { _ = ids.withLock { $0.remove(id) } }
    func contains(_ id: String) -> Bool { ids.withLock { $0.contains(id) } }
}
