import NIOCore
import Synchronization

/// The long sleeps of one event loop (`EventLoopClock`), kept by the slot they end in, with one timer of the loop for
/// the earliest slot that has sleepers. Thousands of polls sleeping on a loop cost its timer heap one entry instead of
/// one each (every insert and removal in that heap copies entries, on every request's own timers too), and a sleep
/// costs an append to its slot's list and no future.
///
/// Confined to its loop: every method but `of` runs on `loop` (`sleep` asserts it; the others are called from it or
/// from the loop's own jobs), which is what makes the unguarded state safe. A sleep cancelled from another thread hands
/// its removal to the loop.
///
/// Besides tasks, a slot holds actions (`run(slot:_:)`): work that needs no task while it waits, such as a match's next
/// poll, which starts a task of its own only when it is due.
final class SleepWheel: @unchecked Sendable {
    private struct Sleeper {
        enum Waker {
            case task(UnsafeContinuation<Void, any Error>)
            case action(@Sendable () -> Void)
        }

        let id: UInt64
        let waker: Waker

        /// Ends the wait: the task resumes, the action runs.
        func wake() {
            switch waker {
            case .task(let continuation): continuation.resume()
            case .action(let action): action()
            }
        }

        /// The wait cannot end as asked (cancelled, or the loop is going away): the task throws, the action is dropped.
        func drop() {
            if case .task(let continuation) = waker { continuation.resume(throwing: CancellationError()) }
        }
    }

    let loop: any EventLoop
    private let slotNanoseconds: UInt64
    /// The sleepers of each slot with any, in the order they went to sleep.
    private var sleepers: [UInt64: [Sleeper]] = [:]
    /// The slots that had sleepers when they were added; a slot emptied by cancellations stays until it is reached.
    private var slots = SlotHeap()
    /// The loop's timer for the earliest slot, and which slot that is.
    private var timer: (slot: UInt64, scheduled: Scheduled<Void>)?
    private var nextId: UInt64 = 0

    private init(loop: any EventLoop, slot: Duration) {
        self.loop = loop
        self.slotNanoseconds = UInt64(TimeAmount(slot).nanoseconds)
    }

    /// Each loop's wheel, made on first use and kept as long as the process (a wheel holds its loop, so no other
    /// loop can take its identifier).
    private static let wheels = Mutex<[ObjectIdentifier: SleepWheel]>([:])

    static func of(_ loop: any EventLoop) -> SleepWheel {
        wheels.withLock { wheels in
            if let wheel = wheels[ObjectIdentifier(loop)] { return wheel }
            let wheel = SleepWheel(loop: loop, slot: EventLoopClock.slot)
            wheels[ObjectIdentifier(loop)] = wheel
            return wheel
        }
    }

    /// Sleeps until slot `slot` (the loop's uptime divided by `EventLoopClock.slot`) has begun. Called on the loop.
    /// Throws `CancellationError` when the task is cancelled first, or the loop shuts down.
    func sleep(slot: UInt64) async throws {
        loop.assertInEventLoop()
        nextId &+= 1
        let id = nextId
        try await withTaskCancellationHandler {
            try await withUnsafeThrowingContinuation { (continuation: UnsafeContinuation<Void, any Error>) in
                // Still on the loop: nothing has suspended since the check above. A task cancelled by now ends here
                // (its flag is set before its handler runs); one cancelled later hands `cancel` to the loop, to run
                // after this job: it finds the sleeper added here.
                loop.assertInEventLoop()
                if Task.isCancelled {
                    continuation.resume(throwing: CancellationError())
                    return
                }
                add(Sleeper(id: id, waker: .task(continuation)), at: slot)
            }
        } onCancel: {
            loop.execute { self.cancel(id, at: slot) }
        }
    }

    /// Runs `action` on the loop once slot `slot` has begun; an action is never cancelled, and is dropped if the loop
    /// shuts down first. Called on the loop.
    func run(slot: UInt64, _ action: @escaping @Sendable () -> Void) {
        loop.assertInEventLoop()
        nextId &+= 1
        add(Sleeper(id: nextId, waker: .action(action)), at: slot)
    }

    private func add(_ sleeper: Sleeper, at slot: UInt64) {
        if sleepers[slot]?.append(sleeper) == nil {
            sleepers[slot] = [sleeper]
            slots.insert(slot)
        }
        if timer.map({ slot < $0.slot }) ?? true { arm() }
    }

    private func cancel(_ id: UInt64, at slot: UInt64) {
        guard let index = sleepers[slot]?.firstIndex(where: { $0.id == id }),
            let sleeper = sleepers[slot]?.remove(at: index)
        else { return }
        if sleepers[slot]?.isEmpty == true { sleepers[slot] = nil }
        sleeper.drop()
    }

    /// How many sleep here now (for tests). Called on the loop.
    var sleeping: Int {
        loop.assertInEventLoop()
        return sleepers.values.reduce(0) { $0 + $1.count }
    }

    /// Wakes every sleeper of the slots that have begun, then sets the timer for the next slot with sleepers.
    private func fire() {
        timer = nil
        let now = NIODeadline.now().uptimeNanoseconds
        while let slot = slots.min, deadline(of: slot).uptimeNanoseconds <= now {
            slots.removeMin()
            for sleeper in sleepers.removeValue(forKey: slot) ?? [] { sleeper.wake() }
        }
        arm()
    }

    /// Points the loop's timer at the earliest slot with sleepers, dropping slots that cancellations emptied.
    private func arm() {
        while let slot = slots.min, sleepers[slot] == nil { slots.removeMin() }
        guard let slot = slots.min else {
            timer?.scheduled.cancel()
            timer = nil
            return
        }
        if timer?.slot == slot { return }
        timer?.scheduled.cancel()
        let scheduled = loop.scheduleTask(deadline: deadline(of: slot)) { self.fire() }
        scheduled.futureResult.whenFailure { error in
            // A timer replaced by an earlier one is cancelled; any other failure is the loop shutting down.
            if case EventLoopError.cancelled = error { return }
            self.failAll()
        }
        timer = (slot, scheduled)
    }

    /// The loop is going away: no timer of it will fire, so every sleeper ends now.
    private func failAll() {
        let all = Array(sleepers.values.joined())
        sleepers = [:]
        slots = SlotHeap()
        timer = nil
        for sleeper in all { sleeper.drop() }
    }

    private func deadline(of slot: UInt64) -> NIODeadline {
        let (nanoseconds, overflow) = slot.multipliedReportingOverflow(by: slotNanoseconds)
        return overflow ? .distantFuture : .uptimeNanoseconds(nanoseconds)
    }
}

/// A binary min-heap of slot numbers.
struct SlotHeap {
    private var storage: [UInt64] = []

    var min: UInt64? { storage.first }

    mutating func insert(_ slot: UInt64) {
        storage.append(slot)
        var child = storage.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard storage[child] < storage[parent] else { break }
            storage.swapAt(child, parent)
            child = parent
        }
    }

    mutating func removeMin() {
        guard !storage.isEmpty else { return }
        storage.swapAt(0, storage.count - 1)
        storage.removeLast()
        var parent = 0
        while true {
            let left = 2 * parent + 1, right = left + 1
            var smallest = parent
            if left < storage.count, storage[left] < storage[smallest] { smallest = left }
            if right < storage.count, storage[right] < storage[smallest] { smallest = right }
            if smallest == parent { return }
            storage.swapAt(parent, smallest)
            parent = smallest
        }
    }
}
