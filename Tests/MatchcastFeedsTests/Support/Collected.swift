import Synchronization

/// Collects values from concurrent code (a poller's callback, a sleeper) for the test to inspect.
final class Collected<Element: Sendable>: Sendable {
    private let items = Mutex<[Element]>([])

    func append(_ item: Element) {
        items.withLock { $0.append(item) }
    }

    var all: [Element] { items.withLock { $0 } }
}
