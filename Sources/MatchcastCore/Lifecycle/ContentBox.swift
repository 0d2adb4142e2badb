/// A `ContentState` behind one reference, so that the many values holding the same content (an
/// update, every activity's sent or held content, every push's `aps`) share it: copying one is a
/// retain instead of some twenty, and comparing two that share it is a pointer check.
///
/// Stores key contents by box (`ActivityLifecycle.Stored`): one row per distinct box of a save, not per activity.
///
/// Immutable: a change makes a new box, so the values that hold one keep value semantics. Equal,
/// hashed and coded as its content, so the values holding one keep their synthesized conformances.
public final class ContentBox: Sendable, Hashable, Codable {
    public let value: ContentState

    public init(_ value: ContentState) {
        self.value = value
    }

    /// Equal contents: the same box, or boxes with equal values.
    public static func == (lhs: ContentBox, rhs: ContentBox) -> Bool {
        lhs === rhs || lhs.value == rhs.value
    }

    public func hash(into hasher: inout Hasher) {
        value.hash(into: &hasher)
    }

    public init(from decoder: any Decoder) throws {
        value = try ContentState(from: decoder)
    }

    public func encode(to encoder: any Encoder) throws {
        try value.encode(to: encoder)
    }
}
