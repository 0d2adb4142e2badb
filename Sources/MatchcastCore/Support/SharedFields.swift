/// A value's fields behind one immutable reference, for a value type copied far more often than it changes (an `aps`
/// and its alert, carried by every push of a fan-out): a copy is one retain, a change makes a new reference (never
/// changing one that another value shares), and equality tries identity before comparing the fields. Coded as the
/// fields themselves, so a type that keeps its fields this way encodes as it did with them inline.
struct SharedFields<Fields: Sendable & Hashable & Codable>: Sendable, Hashable, Codable {
    private final class Storage: Sendable {
        let fields: Fields
        init(_ fields: Fields) { self.fields = fields }
    }

    private var storage: Storage

    init(_ fields: Fields) {
        storage = Storage(fields)
    }

    /// Read in place; a change is written into a new reference.
    var fields: Fields {
        _read { yield storage.fields }
        set { storage = Storage(newValue) }
    }

    /// Whether the two share one reference (what a fan-out's pushes do), not only equal fields.
    func isSameInstance(as other: Self) -> Bool { storage === other.storage }

    static func == (lhs: Self, rhs: Self) -> Bool {
        lhs.storage === rhs.storage || lhs.storage.fields == rhs.storage.fields
    }

    func hash(into hasher: inout Hasher) {
        storage.fields.hash(into: &hasher)
    }

    init(from decoder: any Decoder) throws {
        self.init(try Fields(from: decoder))
    }

    func encode(to encoder: any Encoder) throws {
        try storage.fields.encode(to: encoder)
    }
}
