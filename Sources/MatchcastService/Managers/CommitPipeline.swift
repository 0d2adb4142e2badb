import MatchcastCore
import MatchcastStore
import Synchronization

/// Commits a fan-out chunk by chunk, off the lifecycle manager's actor.
///
/// Each chunk is saved (its activities with its deliveries, in the store's outbox) in the order given, one after
/// the other. Sending runs beside saving: whatever has been saved and not yet sent goes to the relay as one batch as
/// soon as the relay has taken the previous one. So saving runs ahead of sending, the first devices are sent the
/// update after one chunk, and a sink slower than the store (a webhook, APNs) gets large batches, with all its
/// connections busy, rather than one chunk at a time. Nothing is sent before it is saved; a chunk that fails to
/// save stops every chunk after it, and what was saved before it is still sent.
final class CommitPipeline: Sendable {
    typealias Save = @Sendable (
        _ records: [ActivityRecord], _ deliveries: [Delivery], _ share: FanOutShare?
    ) async throws(ServiceError) -> Void
    typealias Send = @Sendable (_ deliveries: [Delivery]) async -> Void

    private struct State {
        /// Saved, not yet taken by the sender, in order.
        var ready: [[Delivery]] = []
        /// The last save handed on; the next one waits for it.
        var lastSave: Task<Void, any Error>?
        var closed = false
    }

    /// What the save tasks, the sender and the caller share.
    private final class Shared: Sendable {
        let state = Mutex(State())
        let wakes: AsyncStream<Void>
        let wake: AsyncStream<Void>.Continuation

        init() {
            (wakes, wake) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        }
    }

    private let save: Save
    private let shared = Shared()
    private let sender: Task<Void, Never>

    init(save: @escaping Save, send: @escaping Send) {
        self.save = save
        let shared = shared
        sender = Task.detached {
            for await _ in shared.wakes {
                while true {
                    let batches = shared.state.withLock { state in
                        defer { state.ready.removeAll(keepingCapacity: true) }
                        return state.ready
                    }
                    guard !batches.isEmpty else { break }
                    // One chunk goes as it is; several are joined into one batch for the relay.
                    await send(batches.count == 1 ? batches[0] : Array(batches.joined()))
                }
                if shared.state.withLock({ $0.closed && $0.ready.isEmpty }) { return }
            }
        }
    }

    deinit {
        // A pipeline dropped without `finish` (never the case in the manager) still lets its sender end.
        shared.wake.finish()
    }

    /// Queues one chunk (described to the store by `share`, when given): saved after every chunk added before it, then
    /// sent. Not after `finish`.
    func add(records: [ActivityRecord], deliveries: [Delivery], share: FanOutShare? = nil) {
        guard !records.isEmpty || !deliveries.isEmpty else { return }
        let (save, shared) = (save, shared)
        shared.state.withLock { current in
            precondition(!current.closed, "a chunk added to a finished commit pipeline would be saved and never sent")
            let previous = current.lastSave
            current.lastSave = Task.detached {
                try await previous?.value
                try await save(records, deliveries, share)
                guard !deliveries.isEmpty else { return }
                shared.state.withLock { $0.ready.append(deliveries) }
                shared.wake.yield()
            }
        }
    }

    /// Waits until every chunk is saved and what was saved is sent; throws the first save's error, if any.
    func finish() async throws(ServiceError) {
        let lastSave = shared.state.withLock { $0.lastSave }
        var failure: (any Error)?
        do {
            try await lastSave?.value
        } catch {
            failure = error
        }
        shared.state.withLock { $0.closed = true }
        shared.wake.yield()
        shared.wake.finish()
        await sender.value
        if let failure { throw failure as? ServiceError ?? ServiceError(.unavailable, "\(failure)") }
    }
}
