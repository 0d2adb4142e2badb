import Crypto
import Foundation
import _CryptoExtras

extension FCMServiceAccount {
    /// The rules for each field of a key file. Each returns the value to keep or throws a `Problem` naming the field.
    enum Field {
        typealias Problem = FCMServiceAccount.Problem

        static func string(_ fields: [String: Any], _ name: String) throws(Problem) -> String {
            guard let value = fields[name] else { throw Problem("field '\(name)' is missing") }
            guard let text = value as? String else { throw Problem("field '\(name)' is not a string") }
            guard !text.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty else { throw Problem("field '\(name)' is empty") }
            return text
        }

        /// Goes into the send URL's path: kept to what Google issues (letters, digits, hyphens; a domain-scoped
        /// project also has dots and a colon).
        static func projectId(_ text: String) throws(Problem) -> String {
            let value = text.trimmingCharacters(in: .whitespaces)
            guard !value.isEmpty, value.utf8.count <= 100,
                  value.unicodeScalars.allSatisfy({ $0.isASCII && ($0.properties.isAlphabetic || isDigit($0) || "-.:".unicodeScalars.contains($0)) })
            else {
                throw Problem("field 'project_id' must be 1 to 100 ASCII letters, digits, '-', '.' or ':'")
            }
            return value
        }

        /// The assertion's issuer: printable ASCII with an `@`, as Google's account addresses are.
        static func clientEmail(_ text: String) throws(Problem) -> String {
            let value = text.trimmingCharacters(in: .whitespaces)
            guard value.utf8.count <= 320, value.unicodeScalars.allSatisfy({ $0.isASCII && $0.value > 0x20 && $0.value < 0x7F }),
                  let at = value.firstIndex(of: "@"), at != value.startIndex, value.index(after: at) != value.endIndex
            else {
                throw Problem("field 'client_email' is not an account address (name@project.iam.gserviceaccount.com)")
            }
            return value
        }

        static func privateKeyId(_ text: String) throws(Problem) -> String {
            guard !text.isEmpty, text.utf8.count <= 128,
                  text.unicodeScalars.allSatisfy({ $0.isASCII && ($0.properties.isAlphabetic || isDigit($0)) })
            else {
                throw Problem("field 'private_key_id' must be ASCII letters and digits (Google issues 40 hex digits)")
            }
            return text
        }

        static func tokenURI(_ text: String) throws(Problem) -> String {
            do {
                return try url(text)
            } catch {
                throw Problem("field 'token_uri' \(error.message)")
            }
        }

        /// An https URL, or http to a loopback host (a local fake in tests): an access token or an assertion must
        /// never cross a network in the clear. Returns it trimmed, without a trailing slash.
        static func url(_ text: String) throws(Problem) -> String {
            var value = text.trimmingCharacters(in: .whitespaces)
            while value.hasSuffix("/") { value.removeLast() }
            guard let url = URL(string: value), let scheme = url.scheme?.lowercased(), let host = url.host, !host.isEmpty else {
                throw Problem("is not an absolute URL")
            }
            guard url.user == nil, url.password == nil, url.fragment == nil else {
                throw Problem("must not carry a user, password or fragment")
            }
            switch scheme {
            case "https":
                return value
            case "http" where isLoopback(host):
                return value
            case "http":
                throw Problem("must use https (http is allowed only to 127.0.0.1, ::1 or localhost, for a local fake)")
            default:
                throw Problem("must use https, not '\(scheme.prefix(20))'")
            }
        }

        static func isLoopback(_ host: String) -> Bool {
            ["127.0.0.1", "localhost", "::1", "[::1]"].contains(host.lowercased())
        }

        /// The RSA key, with a message for each way a key file goes wrong: not PEM, encrypted, an EC key, too short.
        static func privateKey(_ text: String) throws(Problem) -> _RSA.Signing.PrivateKey {
            var pem = text.trimmingCharacters(in: .whitespacesAndNewlines)
            // A key pasted through an environment variable or a shell often keeps its newlines escaped.
            if !pem.contains("\n"), pem.contains("\\n") { pem = pem.replacingOccurrences(of: "\\n", with: "\n") }
            guard pem.hasPrefix("-----BEGIN "), pem.contains("PRIVATE KEY-----") else {
                throw Problem("field 'private_key' is not a PEM private key (expected '-----BEGIN PRIVATE KEY-----')")
            }
            guard !pem.contains("ENCRYPTED") else {
                throw Problem("field 'private_key' is encrypted; Google's key files hold an unencrypted PKCS#8 key")
            }
            if let key = try? _RSA.Signing.PrivateKey(pemRepresentation: pem) { return key }
            // The errors below are never passed on: they could quote part of the key.
            if let short = try? _RSA.Signing.PrivateKey(unsafePEMRepresentation: pem) {
                throw Problem("field 'private_key' is a \(short.keySizeInBits)-bit RSA key; at least 2048 bits are needed")
            }
            if (try? P256.Signing.PrivateKey(pemRepresentation: pem)) != nil || (try? P384.Signing.PrivateKey(pemRepresentation: pem)) != nil
                || (try? P521.Signing.PrivateKey(pemRepresentation: pem)) != nil
            {
                throw Problem("field 'private_key' is an EC key, not RSA (FCM's OAuth2 assertions are RS256)")
            }
            throw Problem("field 'private_key' is not a readable RSA private key")
        }

        private static func isDigit(_ scalar: Unicode.Scalar) -> Bool { ("0"..."9").contains(scalar) }
    }
}
