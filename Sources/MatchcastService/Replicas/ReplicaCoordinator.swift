import Foundation
import Logging
import MatchcastStore
import ServiceLifecycle

/// The replica's side of sharing matches with other replicas (PostgreSQL only):
/// - every third of the lease TTL it renews its leases (a lost one is let go at once), claims the matches that
///   need a replica and that nobody holds (a dead replica's, once their leases expire: taken over, reloaded from
///   the store, its outbox resent), claims the live list's lease, and gives up the matches that are over;
/// - it runs the commands other replicas post for the matches it holds: woken by `LISTEN` at once, and every
///   second anyway (the safety net for a notification missed while the listening connection was down).
public struct ReplicaCoordinator: Service {
    /// The lease name of the live list: one replica polls it.
    public static let liveListLease = "@live-list"

    let service: LiveActivityService
    let clock: any Clock<Duration>
    let logger: Logger

    public init(service: LiveActivityService, clock: any Clock<Duration>, logger: Logger) {
        self.service = service
        self.clock = clock
        self.logger = logger
    }

    private var ownership: MatchOwnership { service.lifecycle.ownership }

    public func run() async throws {
        guard let shared = ownership.shared else { return }
        let (wakes, wake) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        await withDiscardingTaskGroup { group in
            group.addTask { await keepLeases(every: shared.leaseTTL / 3) }
            group.addTask { await listen(shared.store, wake: wake) }
            group.addTask {
                // The safety net: every second, whatever the notifications did.
                while (try? await cancelWhenGracefulShutdown({ try await clock.sleep(for: .seconds(1)) })) != nil {
                    wake.yield()
                }
                wake.finish()
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

    private func keepLeases(every interval: Duration) async {
        repeat {
            await leaseRound()
        } while (try? await cancelWhenGracefulShutdown({ try await clock.sleep(for: interval) })) != nil
    }

    /// One round: renew, claim what needs a replica, let go of what is over.
    func leaseRound() async {
        guard let shared = ownership.shared else { return }
        for matchId in await ownership.renewAll() where matchId != Self.liveListLease {
            logger.warning("match lease lost", metadata: ["match": "\(matchId)"])
            await service.lifecycle.release(matchId: matchId)
        }
        let needed: [String]
        do {
            needed = try await shared.store.matchesNeedingOwner()
        } catch {
            logger.error("cannot list the matches that need a replica", metadata: ["error": "\(error)"])
            return
        }
        var gained = false
        for matchId in needed where !ownership.holds(matchId) {
            do {
                gained = try await service.router.runsHere(matchId) || gained
            } catch {
                logger.error("cannot take match", metadata: ["match": "\(matchId)", "error": "\(error)"])
            }
        }
        if !ownership.holds(Self.liveListLease), (try? await ownership.claim(Self.liveListLease)) != .elsewhere {
            logger.info("live list lease acquired")
            gained = true
        }
        let stillNeeded = Set(needed)
        for matchId in ownership.heldMatches where matchId != Self.liveListLease && !stillNeeded.contains(matchId) {
            guard await service.lifecycle.isDone(matchId: matchId) else { continue }
            await service.lifecycle.release(matchId: matchId)
            await ownership.release(matchId)
            logger.info("match lease released", metadata: ["match": "\(matchId)"])
        }
        if gained { service.pollersShouldLook() }
        // Outcomes their posters never came back for, and changes nobody ran for 10 minutes.
        try? await shared.store.forgetCommands(postedBefore: .seconds(600))
    }

    // MARK: Commands

    private func listen(_ store: any ReplicaStore, wake: AsyncStream<Void>.Continuation) async {
        let ownership = self.ownership
        while !Task.isCancelled && !Task.isShuttingDownGracefully {
            do {
                try await store.listenForCommands { matchId in
                    if ownership.holds(matchId) { wake.yield() }
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
                case .unfollow: service.followChanges.unfollowed(posted.command.matchId)
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
