import Foundation
import MatchcastCore

/// What several `matchcast serve` replicas sharing one database need beyond `MatchcastStore`: match leases (who
/// runs a match), an inbox of commands for the replica that runs a match, writes fenced by a lease, and the
/// outbox of one match (what a dead owner left unsent). Only PostgreSQL is shared; the single-process stores do
/// not conform, and a broker on them runs every match itself.
public protocol ReplicaStore: MatchcastStore, MatchLeases {
    /// Saves like `saveActivities(_:enqueue:share:match:)`, only while every match of `records` is still leased to
    /// `fence.owner` with the generation `fence` names; otherwise none of the records and deliveries is written and
    /// it throws `.leaseLost` (the match's row, like `saveMatch`, is not fenced).
    func saveActivities(
        _ records: [ActivityRecord], enqueue deliveries: [Delivery], fence: LeaseFence, share: FanOutShare?,
        match: MatchRecord?
    ) async throws(StoreError)
    /// The match's queued deliveries, oldest first.
    func queuedDeliveries(matchId: String) async throws(StoreError) -> [Delivery]
    /// Matches that need a replica: followed and not over by their last stored snapshot, or with an open activity,
    /// or with deliveries still queued (a final `end` a dead replica saved but did not send), or with a broadcast
    /// channel not yet deleted. Sorted.
    func matchesNeedingOwner() async throws(StoreError) -> [String]

    /// Queues a command for the replica that runs `command.matchId` and wakes it (`commandPosted`); returns its id.
    func postCommand(_ command: MatchCommand) async throws(StoreError) -> Int64
    /// Commands not yet done for these matches, oldest first.
    func pendingCommands(matchIds: [String]) async throws(StoreError) -> [PostedCommand]
    /// Marks a command done, with the refusal it met if any (kept for the poster to read).
    func completeCommand(id: Int64, refusal: CommandRefusal?) async throws(StoreError)
    /// Where a posted command stands: `nil` while pending (or once forgotten).
    func commandOutcome(id: Int64) async throws(StoreError) -> CommandOutcome?
    /// Forgets a command whose outcome its poster has read.
    func forgetCommand(id: Int64) async throws(StoreError)
    /// Forgets every command posted more than `age` ago, done or not: outcomes nobody came back for, and
    /// changes no replica ran in that time (their callers were told to retry long ago).
    func forgetCommands(postedBefore age: Duration) async throws(StoreError)
    /// Calls `onSignal` for every command posted and every lease released by any replica, until cancelled or the
    /// connection fails (then it throws: listen again).
    func listen(_ onSignal: @escaping @Sendable (ReplicaSignal) -> Void) async throws
}

/// What one replica tells the others through the store (PostgreSQL's `NOTIFY`).
public enum ReplicaSignal: Sendable, Hashable {
    /// A command for this match was posted: its owner should run it.
    case commandPosted(matchId: String)
    /// A replica gave this match's lease up (it is shutting down, or the match is over): whoever needs it may take it.
    case leaseReleased(matchId: String)

    /// A released lease's payload starts with a character no match id has; a command's is the bare match id,
    /// as replicas of earlier builds send and expect it.
    private static let releasedPrefix = "!released:"

    public init(payload: String) {
        if payload.hasPrefix(Self.releasedPrefix) {
            self = .leaseReleased(matchId: String(payload.dropFirst(Self.releasedPrefix.count)))
        } else {
            self = .commandPosted(matchId: payload)
        }
    }

    /// The notification's text.
    public var payload: String {
        switch self {
        case .commandPosted(let matchId): matchId
        case .leaseReleased(let matchId): Self.releasedPrefix + matchId
        }
    }
}

/// The lease a write is made under: the owner and, per match, the generation it claimed.
public struct LeaseFence: Sendable, Hashable {
    public var owner: String
    public var generations: [String: Int]

    public init(owner: String, generations: [String: Int]) {
        self.owner = owner
        self.generations = generations
    }
}

/// A change a replica was asked for (through its HTTP API) on a match another replica runs.
public struct MatchCommand: Codable, Sendable, Hashable {
    public enum Kind: String, Codable, Sendable {
        case follow, unfollow, registerUpdateToken, dismiss, invalidateUpdateToken, pushToStartTokenChanged
        case pushToStartTokenRejected
    }

    public var kind: Kind
    public var matchId: String
    public var deviceId: String?
    public var activityId: String?
    /// An update token (never logged whole).
    public var token: String?
    public var environment: APNsEnvironment?

    public init(
        _ kind: Kind, matchId: String, deviceId: String? = nil, activityId: String? = nil, token: String? = nil,
        environment: APNsEnvironment? = nil
    ) {
        self.kind = kind
        self.matchId = matchId
        self.deviceId = deviceId
        self.activityId = activityId
        self.token = token
        self.environment = environment
    }
}

/// A command as queued.
public struct PostedCommand: Sendable, Hashable {
    public var id: Int64
    public var command: MatchCommand

    public init(id: Int64, command: MatchCommand) {
        self.id = id
        self.command = command
    }
}

/// Why the owner refused a command: a service error's code and message, for the poster to answer with.
public struct CommandRefusal: Sendable, Hashable {
    public var code: String
    public var message: String

    public init(code: String, message: String) {
        self.code = code
        self.message = message
    }
}

/// A command the owner has done.
public struct CommandOutcome: Sendable, Hashable {
    public var refusal: CommandRefusal?

    public init(refusal: CommandRefusal?) {
        self.refusal = refusal
    }
}

extension ReplicaStore {
    /// A fenced save that is not a fan-out chunk.
    public func saveActivities(
        _ records: [ActivityRecord], enqueue deliveries: [Delivery], fence: LeaseFence
    ) async throws(StoreError) {
        try await saveActivities(records, enqueue: deliveries, fence: fence, share: nil, match: nil)
    }
}
