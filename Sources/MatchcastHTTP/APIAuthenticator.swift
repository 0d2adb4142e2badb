import Foundation
import Hummingbird
import MatchcastService

/// Who may make a call: devices by their bearer secret, the operator by the admin key.
///
/// Secrets are only compared, never logged; the admin key is compared in constant time.
struct APIAuthenticator: Sendable {
    let service: LiveActivityService
    let adminKey: String?
    /// Keys scoped to one app each, by app id (docs/apps.md).
    var appAdminKeys: [String: String] = [:]

    /// What an admin key may see and change: everything, or one app's devices.
    enum AdminScope: Sendable, Hashable {
        case deployment
        case app(String)

        /// The app an admin call is limited to; nil for the deployment's key.
        var appId: String? {
            if case .app(let id) = self { return id }
            return nil
        }
    }

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

    /// Admin calls: the deployment's key, or an app's (the call then sees that app's devices only); 403 when no key
    /// is configured.
    @discardableResult
    func admin(_ request: Request) throws(APIError) -> AdminScope {
        guard adminKey != nil || !appAdminKeys.isEmpty else { throw .forbidden("no admin key configured") }
        guard let key = Self.bearer(request) else { throw .unauthorized("missing or malformed bearer admin key") }
        guard let scope = scope(of: key) else { throw .unauthorized("invalid admin key") }
        return scope
    }

    /// Read-only calls open to any registered device and to the operator.
    func deviceOrAdmin(_ request: Request) async throws(APIError) {
        if let key = Self.bearer(request), scope(of: key) != nil { return }
        _ = try await device(request)
    }

    /// Whose key `key` is. Every configured key is compared, each in constant time, so the time taken does not tell
    /// which (or whether one) matched.
    private func scope(of key: String) -> AdminScope? {
        var found: AdminScope?
        if let adminKey, Self.constantTimeEqual(key, adminKey) { found = .deployment }
        for (app, appKey) in appAdminKeys.sorted(by: { $0.key < $1.key }) where Self.constantTimeEqual(key, appKey) {
            found = found ?? .app(app)
        }
        return found
    }

    /// The credential of `Authorization: Bearer <credential>` (scheme case-insensitive, RFC 9110 §11.1).
    static func bearer(_ request: Request) -> String? {
        request.headers[.authorization].flatMap(bearer(fromHeader:))
    }

    /// The credential of an `Authorization` value `Bearer <credential>`: the scheme in any case after any spaces, one
    /// space, the credential without the spaces and tabs around it, at most `maxCredentialLength` bytes. Read byte by
    /// byte: a value with a byte outside ASCII is refused (credentials are ASCII, RFC 9110's token68).
    static func bearer(fromHeader value: String) -> String? {
        let space = UInt8(ascii: " "), tab = UInt8(ascii: "\t")
        var bytes = value.utf8[...]
        guard bytes.allSatisfy({ $0 < 0x80 }) else { return nil }
        while bytes.first == space { bytes.removeFirst() }
        guard let end = bytes.firstIndex(of: space) else { return nil }
        let scheme = bytes[..<end]
        // ASCII letters only: `| 0x20` lowers a letter and maps no other byte onto one of "bearer".
        guard scheme.count == 6, zip(scheme, "bearer".utf8).allSatisfy({ $0 | 0x20 == $1 }) else { return nil }
        var credential = bytes[bytes.index(after: end)...]
        while let first = credential.first, first == space || first == tab { credential.removeFirst() }
        while let last = credential.last, last == space || last == tab { credential.removeLast() }
        guard !credential.isEmpty, credential.count <= maxCredentialLength else { return nil }
        return String(Substring(credential))
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
