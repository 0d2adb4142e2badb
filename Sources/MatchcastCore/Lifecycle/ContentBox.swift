/// A `ContentState` behind one reference, so that the many values holding the same content (an
/// update, every activity's sent or held content, every push's `aps`) share it: copying one is a
/// retain instead of some twenty, and comparing two that share it is a pointer check.
///
/// Immutable: a change makes a new box, so the values that hold one keep value semantics.
final class ContentBox: Sendable {
    let value: ContentState

    init(_ value: ContentState) {
        self.value = value
    }

    /// Equal contents: the same box, or boxes with equal values.
    static func same(_ lhs: ContentBox, _ rhs: ContentBox) -> Bool {
        lhs === rhs || lhs.value == rhs.value
    }

    static func same(_ lhs: ContentBox?, _ rhs: ContentBox?) -> Bool {
        switch (lhs, rhs) {
        case (nil, nil): true
        case let (lhs?, rhs?): same(lhs, rhs)
        default: false
        }
    }
}
