import Crypto
import Foundation
import SwiftASN1
import X509

/// A throwaway certificate authority and a server certificate it signed, for TLS in tests: made in
/// memory at test time (P-256, ECDSA-SHA256), valid from an hour ago for a day, never written
/// anywhere unless a test asks (`writeCAFile(in:)`).
///
/// The server certificate names `localhost` and `127.0.0.1` (and any further hosts asked for), so a
/// client trusting `caPEM` can reach a server on the loopback address by either name.
public struct TestCertificates: Sendable {
    /// The CA certificate, PEM: what a client must trust.
    public let caPEM: String
    /// The server's certificate, PEM, signed by the CA.
    public let serverCertificatePEM: String
    /// The server's private key, PEM (PKCS#8).
    public let serverKeyPEM: String

    /// Makes a new CA and server certificate.
    public static func make(
        dnsNames: [String] = ["localhost"], ipv4Addresses: [[UInt8]] = [[127, 0, 0, 1]], now: Date = Date()
    ) throws -> TestCertificates {
        let caKey = P256.Signing.PrivateKey()
        let serverKey = P256.Signing.PrivateKey()
        let caName = try DistinguishedName {
            OrganizationName("Matchcast tests")
            CommonName("Matchcast throwaway test CA")
        }
        let serverName = try DistinguishedName {
            OrganizationName("Matchcast tests")
            CommonName(dnsNames.first ?? "localhost")
        }
        let notBefore = now.addingTimeInterval(-3600)
        let notAfter = now.addingTimeInterval(86400)

        let ca = try Certificate(
            version: .v3,
            serialNumber: Certificate.SerialNumber(),
            publicKey: .init(caKey.publicKey),
            notValidBefore: notBefore,
            notValidAfter: notAfter,
            issuer: caName,
            subject: caName,
            signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.isCertificateAuthority(maxPathLength: 0))
                Critical(KeyUsage(keyCertSign: true, cRLSign: true))
                SubjectKeyIdentifier(hash: .init(caKey.publicKey))
            },
            issuerPrivateKey: .init(caKey))

        let names = dnsNames.map { GeneralName.dnsName($0) }
            + ipv4Addresses.map { GeneralName.ipAddress(ASN1OctetString(contentBytes: ArraySlice($0))) }
        let server = try Certificate(
            version: .v3,
            serialNumber: Certificate.SerialNumber(),
            publicKey: .init(serverKey.publicKey),
            notValidBefore: notBefore,
            notValidAfter: notAfter,
            issuer: caName,
            subject: serverName,
            signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.notCertificateAuthority)
                Critical(KeyUsage(digitalSignature: true))
                try ExtendedKeyUsage([.serverAuth])
                SubjectAlternativeNames(names)
                AuthorityKeyIdentifier(keyIdentifier: SubjectKeyIdentifier(hash: .init(caKey.publicKey)).keyIdentifier)
            },
            issuerPrivateKey: .init(caKey))

        return TestCertificates(
            caPEM: try ca.serializeAsPEM().pemString,
            serverCertificatePEM: try server.serializeAsPEM().pemString,
            serverKeyPEM: serverKey.pemRepresentation)
    }

    /// Writes `caPEM` to a new file in `directory` (the tests' `ScratchFolder` by default, removed
    /// when the process exits) and returns its path, for code that takes a CA file (`--apns-ca-file`).
    public func writeCAFile(in directory: URL = ScratchFolder.url) throws -> String {
        let url = directory.appendingPathComponent("matchcast-test-ca-\(UUID().uuidString).pem")
        try Data(caPEM.utf8).write(to: url)
        return url.path
    }
}
