/// A `ContentState` behind one reference, so that the many values holding the same content (an
/// update, every activity's sent or held content, every push's `aps`) share it: copying one is a
/// retain instead of some twenty, and comparing two that share it is a pointer check.
///
/// Immutable: a change makes a new box, so the values that hold one keep value semantics. Equal,
/// hashed and coded as its content, so the values holding one keep their synthesized conformances.
final class ContentBox: Sendable, Hashable, Codable {
    let value: ContentState

    init(_ value: ContentState) {
        self.value = value
    }

    /// Equal contents: the same box, or boxes with equal values.
    static func == (lhs: ContentBox, rhs: ContentBox) -> Bool {
        lhs === rhs || lhs.value == rhs.value
    }

    func hash(into hasher: inout Hasher) {
        value.hash(into: &hasher)
    }

    init(from decoder: any Decoder) throws {
        value = try ContentState(from: decoder)
    }

    func encode(to encoder: any Encoder) throws {
        try value.encode(to: encoder)
    }
}
