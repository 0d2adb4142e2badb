import Foundation

/// A registered app install.
public struct DeviceRecord: Sendable, Hashable, Codable {
    public var id: String
    /// Lowercase hex SHA-256 of the device secret; the secret itself is never stored.
    public var secretHash: String
    public var createdAt: Date

    public init(id: String, secretHash: String, createdAt: Date) {
        self.id = id
        self.secretHash = secretHash
        self.createdAt = createdAt
    }
}
