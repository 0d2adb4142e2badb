import Foundation
import Hummingbird
import MatchcastService

/// Who may make a call: devices by their bearer secret, the operator by the admin key.
///
/// Secrets are only compared, never logged; the admin key is compared in constant time.
struct APIAuthenticator: Sendable {
    let service: LiveActivityService
    let adminKey: String?

    /// Longest bearer credential looked at; anything longer is refused without hashing it.
    static let maxCredentialLength = 512

    /// The device the request's bearer secret belongs to.
    func device(_ request: Request) async throws(APIError) -> String {
        guard let secret = Self.bearer(request) else {
            throw .unauthorized("missing or malformed bearer device secret")
        }
        do {
            return try await service.authenticateDevice(secret: secret)
        } catch {
            throw error.code == .unauthorized ? .unauthorized("invalid device secret") : APIError(error)
        }
    }

    /// The authenticated device, which must be the one the path or body names.
    func device(_ request: Request, owning deviceId: String) async throws(APIError) -> String {
        let authenticated = try await device(request)
        guard authenticated == deviceId else {
            throw .forbidden("a device can only see and change its own tokens, follows and activities")
        }
        return authenticated
    }

    /// Admin calls: the configured key, or 403 when none is configured.
    func admin(_ request: Request) throws(APIError) {
        guard let adminKey else { throw .forbidden("no admin key configured") }
        guard let key = Self.bearer(request) else { throw .unauthorized("missing or malformed bearer admin key") }
        guard Self.constantTimeEqual(key, adminKey) else { throw .unauthorized("invalid admin key") }
    }

    /// Read-only calls open to any registered device and to the operator.
    func deviceOrAdmin(_ request: Request) async throws(APIError) {
        if let adminKey, let key = Self.bearer(request), Self.constantTimeEqual(key, adminKey) { return }
        _ = try await device(request)
    }

    /// The credential of `Authorization: Bearer <credential>` (scheme case-insensitive, RFC 9110 §11.1).
    static func bearer(_ request: Request) -> String? {
        guard let value = request.headers[.authorization] else { return nil }
        let parts = value.split(separator: " ", maxSplits: 1, omittingEmptySubsequences: true)
        guard parts.count == 2, parts[0].lowercased() == "bearer" else { return nil }
        let credential = parts[1].trimmingCharacters(in: .whitespaces)
        guard !credential.isEmpty, credential.utf8.count <= maxCredentialLength else { return nil }
        return String(credential)
    }

    /// Equality whose time depends only on the lengths, not on where the strings differ.
    static func constantTimeEqual(_ a: String, _ b: String) -> Bool {
        let x = Array(a.utf8), y = Array(b.utf8)
        var difference: UInt8 = x.count == y.count ? 0 : 1
        for index in 0..<max(x.count, y.count) {
            difference |= (index < x.count ? x[index] : 0) ^ (index < y.count ? y[index] : 0)
        }
        return difference == 0
    }
}
