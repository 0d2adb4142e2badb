/// A request the service refuses: a fixed machine-readable `code` (the HTTP layer maps it to a
/// 4xx status, metrics use it as a label) and a one-line message for the caller.
public struct ServiceError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The kinds of refusal.
    public enum Code: String, Sendable, Hashable, CaseIterable {
        /// The request is malformed: a bad token, an id too long, a missing field.
        case invalidRequest = "invalid_request"
        /// No or wrong credentials.
        case unauthorized
        /// Valid credentials for something else: another device's follows or activities.
        case forbidden
        case notFound = "not_found"
        /// The request contradicts current state (an update token held by another activity).
        case conflict
        /// Storage or a dependency failed; the caller may retry.
        case unavailable
    }

    public let code: Code
    public let message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { "\(code.rawValue): \(message)" }
}
