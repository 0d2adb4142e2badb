import Foundation
import Logging
import MatchcastStore
import ServiceLifecycle
import Synchronization

/// The replica's side of sharing matches with other replicas (PostgreSQL only):
/// - every third of the lease TTL it renews its leases (a lost one is let go at once) and takes over the matches of
///   other replicas whose leases have expired (a dead replica's: reloaded from the store, its outbox resent); it
///   looks again the moment the next of the others' leases is due to expire, so a dead replica's matches move
///   within a lease TTL of its last renewal;
/// - every `scanInterval`, and at once when another replica releases a lease (it is shutting down), it claims the
///   matches that need a replica and nobody holds, claims the live list's lease if it is free, and gives up the
///   matches that are over;
/// - it runs the commands other replicas post for the matches it holds: woken by `LISTEN` at once, and every
///   second anyway (the safety net for a notification missed while the listening connection was down).
public struct ReplicaCoordinator: Service {
    /// The lease name of the live list: one replica polls it.
    public static let liveListLease = "@live-list"
    /// How often a replica looks for matches that need one and that no lease names (the safety net: a match is
    /// claimed when it is followed, and a released or expired lease is acted on at once).
    static let scanInterval = Duration.seconds(5)
    /// How long after the next foreign lease's expiry the replica looks: the store's clock and this one's
    /// timers need not agree to the millisecond.
    static let expiryMargin = Duration.milliseconds(20)

    let service: LiveActivityService
    let clock: any Clock<Duration>
    let logger: Logger

    public init(service: LiveActivityService, clock: any Clock<Duration>, logger: Logger) {
        self.service = service
        self.clock = clock
        self.logger = logger
    }

    private var ownership: MatchOwnership { service.lifecycle.ownership }

    /// Asks the lease loop for a round, now or after a delay; asks for a scan in it too when another replica
    /// released a lease. Requests made while a round runs become one more round.
    final class RoundRequests: Sendable {
        let rounds: AsyncStream<Void>
        private let continuation: AsyncStream<Void>.Continuation
        private let scanWanted = Mutex(true)

        init() {
            (rounds, continuation) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        }

        func round() { continuation.yield() }

        func scan() {
            scanWanted.withLock { $0 = true }
            continuation.yield()
        }

        /// True once after each `scan()` (and at first).
        func takeScan() -> Bool { scanWanted.withLock { wanted in defer { wanted = false }; return wanted } }

        func finish() { continuation.finish() }
    }

    public func run() async throws {
        guard let shared = ownership.shared else { return }
        let (wakes, wake) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        let requests = RoundRequests()
        await withDiscardingTaskGroup { group in
            group.addTask { await keepLeases(renewEvery: shared.leaseTTL / 3, requests: requests) }
            group.addTask { await listen(shared.store, wake: wake, requests: requests) }
            group.addTask {
                // The look for matches nobody holds, on its own cadence whatever the TTL.
                while (try? await cancelWhenGracefulShutdown({ try await clock.sleep(for: Self.scanInterval) })) != nil {
                    requests.scan()
                }
            }
            group.addTask {
                // The safety net: every second, whatever the notifications did.
                while (try? await cancelWhenGracefulShutdown({ try await clock.sleep(for: .seconds(1)) })) != nil {
                    wake.yield()
                }
                wake.finish()
                requests.finish()
            }
            group.addTask {
                for await _ in wakes { await runCommands(shared.store) }
            }
            try? await gracefulShutdown()
            group.cancelAll()
        }
        for matchId in ownership.heldMatches { await ownership.release(matchId) }
        logger.info("replica let its matches go", metadata: ["replica": "\(shared.replicaId)"])
    }

    // MARK: Leases

    /// Runs a lease round for each request, the first a scan; after each, asks for the next at `interval`, or
    /// sooner when another replica's lease expires before then.
    private func keepLeases(renewEvery interval: Duration, requests: RoundRequests) async {
        let clock = self.clock
        var timer: Task<Void, Never>?
        requests.round()
        for await _ in requests.rounds {
            timer?.cancel()
            let nextExpiry = await leaseRound(scan: requests.takeScan())
            let delay = min(interval, nextExpiry.map { $0 + Self.expiryMargin } ?? interval)
            timer = Task {
                if (try? await clock.sleep(for: delay)) != nil { requests.round() }
            }
        }
        timer?.cancel()
    }

    /// One round: renew, take over the other replicas' expired leases and, when `scan`, claim what needs a
    /// replica and let go of what is over. Returns how long until the next of the others' leases expires.
    @discardableResult
    func leaseRound(scan: Bool = true) async -> Duration? {
        guard let shared = ownership.shared else { return nil }
        for matchId in await ownership.renewAll() where matchId != Self.liveListLease {
            logger.warning("match lease lost", metadata: ["match": "\(matchId)"])
            await service.lifecycle.release(matchId: matchId)
        }
        var gained = false
        var nextExpiry: Duration?
        do {
            let elsewhere = try await shared.store.leasesHeldElsewhere(than: shared.leaseOwner)
            nextExpiry = elsewhere.nextExpiry
            for matchId in elsewhere.expired { gained = await take(matchId) || gained }
        } catch {
            logger.error("cannot read the other replicas' leases", metadata: ["error": "\(error)"])
        }
        if scan {
            // The live list's lease when it is free (never taken, or released); an expired one was taken above.
            gained = await take(Self.liveListLease) || gained
            gained = await scanForMatches(shared.store) || gained
        }
        if gained { service.pollersShouldLook() }
        return nextExpiry
    }

    /// Claims the matches that need a replica and that nobody holds, and lets go of the held ones that are over;
    /// true when it gained one.
    private func scanForMatches(_ store: any ReplicaStore) async -> Bool {
        let needed: [String]
        do {
            needed = try await store.matchesNeedingOwner()
        } catch {
            logger.error("cannot list the matches that need a replica", metadata: ["error": "\(error)"])
            return false
        }
        var gained = false
        for matchId in needed where !ownership.holds(matchId) {
            gained = await take(matchId) || gained
        }
        let stillNeeded = Set(needed)
        for matchId in ownership.heldMatches where matchId != Self.liveListLease && !stillNeeded.contains(matchId) {
            guard await service.lifecycle.isDone(matchId: matchId) else { continue }
            await service.lifecycle.release(matchId: matchId)
            await ownership.release(matchId)
            logger.info("match lease released", metadata: ["match": "\(matchId)"])
        }
        // Outcomes their posters never came back for, and changes nobody ran for 10 minutes.
        try? await store.forgetCommands(postedBefore: .seconds(600))
        return gained
    }

    /// Claims the match (or the live list) if it is free; true when this replica gained it.
    private func take(_ matchId: String) async -> Bool {
        guard !ownership.holds(matchId) else { return false }
        if matchId == Self.liveListLease {
            guard case .gained = try? await ownership.claim(matchId) else { return false }
            logger.info("live list lease acquired")
            return true
        }
        do {
            return try await service.router.runsHere(matchId)
        } catch {
            logger.error("cannot take match", metadata: ["match": "\(matchId)", "error": "\(error)"])
            return false
        }
    }

    // MARK: Commands

    private func listen(_ store: any ReplicaStore, wake: AsyncStream<Void>.Continuation, requests: RoundRequests) async {
        let ownership = self.ownership
        while !Task.isCancelled && !Task.isShuttingDownGracefully {
            do {
                try await store.listen { signal in
                    switch signal {
                    case .commandPosted(let matchId): if ownership.holds(matchId) { wake.yield() }
                    case .leaseReleased(let matchId): if !ownership.holds(matchId) { requests.scan() }
                    }
                }
            } catch {
                if Task.isCancelled { return }
                logger.warning("listening for commands failed; polling meanwhile", metadata: ["error": "\(error)"])
            }
            guard (try? await cancelWhenGracefulShutdown({ try await clock.sleep(for: .seconds(1)) })) != nil else { return }
        }
    }

    /// Runs the pending commands of the matches held here, oldest first.
    func runCommands(_ store: any ReplicaStore) async {
        let held = ownership.heldMatches.filter { $0 != Self.liveListLease }
        guard !held.isEmpty else { return }
        let pending: [PostedCommand]
        do {
            pending = try await store.pendingCommands(matchIds: held)
        } catch {
            logger.error("cannot read commands", metadata: ["error": "\(error)"])
            return
        }
        for posted in pending where ownership.holds(posted.command.matchId) {
            var refusal: CommandRefusal?
            do {
                try await service.router.execute(posted.command)
                // The owner's supervisor hears of follows made through other replicas' APIs at once.
                switch posted.command.kind {
                // Registering an update token follows the match too (an adopted activity is followed).
                case .follow, .registerUpdateToken: service.followChanges.followed(posted.command.matchId)
                case .unfollow: service.followChanges.unsure(posted.command.matchId)
                default: break
                }
            } catch where error.code == .unavailable {
                // Not done (the store failed, or the match moved on): left for the next round or the next owner.
                logger.warning("command not run", metadata: ["id": "\(posted.id)", "error": "\(error)"])
                continue
            } catch {
                refusal = CommandRefusal(code: error.code.rawValue, message: error.message)
            }
            do {
                try await store.completeCommand(id: posted.id, refusal: refusal)
            } catch {
                logger.error("cannot mark command done", metadata: ["id": "\(posted.id)", "error": "\(error)"])
            }
        }
    }
}
