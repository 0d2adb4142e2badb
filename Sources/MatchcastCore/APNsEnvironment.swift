/// The APNs environment a token was issued for: a development build's tokens only work with the
/// sandbox gateway, an App Store or TestFlight build's only with production.
public enum APNsEnvironment: String, Sendable, Hashable, Codable, CaseIterable {
    case production
    case sandbox
}
