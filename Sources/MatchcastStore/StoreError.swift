/// Why a store call failed. Compare with the static values (`error == .conflict`); equality looks
/// at the kind only, not the message.
public struct StoreError: Error, Sendable, Hashable, CustomStringConvertible {
    private enum Code: String, Sendable, Hashable {
        case conflict
        case notFound
        case invalid
        case corrupt
        case database
        case configuration
        case leaseLost
    }

    private let code: Code
    /// What happened, for logs. Never holds a whole token or secret.
    public let message: String

    private init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    /// A short fixed label for metrics: `conflict`, `notFound`, `invalid`, `corrupt`, `database`, `configuration`, `leaseLost`.
    public var reason: String { code.rawValue }

    public var description: String { message.isEmpty ? reason : "\(reason): \(message)" }

    public static func == (lhs: StoreError, rhs: StoreError) -> Bool { lhs.code == rhs.code }

    public func hash(into hasher: inout Hasher) { hasher.combine(code) }

    /// The write would break a uniqueness rule: the id exists, or the update token is held by another open activity.
    public static let conflict = StoreError(.conflict, "")
    /// A record the call refers to (usually the device) does not exist.
    public static let notFound = StoreError(.notFound, "")
    /// The record contradicts itself (ids that differ from its lifecycle's or snapshot's).
    public static let invalid = StoreError(.invalid, "")
    /// Stored data cannot be read back (bad JSON, unknown enum value, damaged file).
    public static let corrupt = StoreError(.corrupt, "")
    /// The database failed: I/O, locking, closed connection.
    public static let database = StoreError(.database, "")
    /// The store cannot be set up: bad store URL, unusable path.
    public static let configuration = StoreError(.configuration, "")
    /// A write fenced by a match lease found the lease held by another replica (or a later generation):
    /// nothing was written, and this replica must let the match go.
    public static let leaseLost = StoreError(.leaseLost, "")

    static func conflict(_ message: String) -> StoreError { StoreError(.conflict, message) }
    static func notFound(_ message: String) -> StoreError { StoreError(.notFound, message) }
    static func invalid(_ message: String) -> StoreError { StoreError(.invalid, message) }
    static func corrupt(_ message: String) -> StoreError { StoreError(.corrupt, message) }
    static func database(_ message: String) -> StoreError { StoreError(.database, message) }
    static func configuration(_ message: String) -> StoreError { StoreError(.configuration, message) }
    static func leaseLost(_ message: String) -> StoreError { StoreError(.leaseLost, message) }
}

extension StoreError {
    /// Enough of a token to tell two apart in a log line, never the whole of it.
    static func redacted(_ token: String) -> String {
        token.count > 12 ? "\(token.prefix(6))…" : "…"
    }
}
