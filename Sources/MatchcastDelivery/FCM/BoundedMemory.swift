import Synchronization

/// A bounded map kept in memory, for what the FCM sink remembers between batches: a match's `start` attributes, the
/// tokens FCM called dead. Two generations of `capacity / 2` entries each, the older let go when the newer fills
/// (as `TokenAnswers`), so what was written recently is always found and the oldest is forgotten first.
final class BoundedMemory<Key: Hashable & Sendable, Value: Sendable>: Sendable {
    private struct Generations: Sendable {
        var current: [Key: Value] = [:]
        var previous: [Key: Value] = [:]
    }

    private let generations = Mutex(Generations())
    private let half: Int

    init(capacity: Int) {
        half = max(1, capacity / 2)
    }

    func set(_ value: Value, for key: Key) {
        generations.withLock { state in
            if state.current[key] == nil, state.current.count >= half {
                state.previous = state.current
                state.current = [:]
            }
            state.current[key] = value
        }
    }

    func value(for key: Key) -> Value? {
        generations.withLock { $0.current[key] ?? $0.previous[key] }
    }
}
