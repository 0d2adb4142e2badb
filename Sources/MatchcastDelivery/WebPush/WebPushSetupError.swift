/// What a user gave the Web Push sink that cannot be used: the subscription file, the VAPID key file or the VAPID
/// subject. The message says which file and what is wrong in one line; it never quotes a key, the auth secret or
/// the endpoint's path (which is the subscription's capability: whoever has it can push).
public struct WebPushSetupError: Error, Sendable, Hashable, CustomStringConvertible {
    /// Which input is at fault.
    public enum Part: String, Sendable, Hashable {
        /// The browser's `PushSubscription` JSON.
        case subscription
        /// The VAPID private key file.
        case vapidKey
        /// The VAPID subject (a contact URI).
        case vapidSubject
        /// The sink's own limits (attempts, timeouts, concurrency).
        case limits
    }

    public let part: Part
    public let message: String

    public init(_ part: Part, _ message: String) {
        self.part = part
        self.message = message
    }

    public var description: String { message }
}
