import Crypto
import Foundation
import SwiftASN1
import SyncNodeStore
import X509

/// A certificate and private key for the listener's TLS.
///
/// Without a configured identity a node makes a self-signed ("anonymous")
/// P-256 one on first start and keeps it (key file mode 0600), so its
/// fingerprint, which peers pin, stays the same across restarts.
public struct TLSIdentity: Sendable {
    /// The certificate, DER-encoded.
    public let certificateDER: [UInt8]
    /// The certificate, PEM-encoded (for clients to trust).
    public let certificatePEM: String
    let privateKeyPEM: String

    /// base64url (no padding) of the SHA-256 of the DER certificate: what peers pin.
    public var fingerprint: String { Self.fingerprint(der: certificateDER) }

    /// When the certificate stops being valid (ten years after a node makes it).
    public var expires: Date? { (try? Certificate(derEncoded: certificateDER))?.notValidAfter }

    /// Imports a PEM certificate (the first block is used) and its private key (EC or RSA, unencrypted).
    ///
    /// The listener offers only ECDSA cipher suites for TLS 1.2, so an RSA identity serves TLS 1.3 clients only.
    /// - Throws: ``SyncError/invalidIdentity(_:)`` when there is no `CERTIFICATE` block or the key does not
    ///   belong to the certificate; the PEM or X.509 parser's error for text that does not parse.
    public init(certificatePEM: String, privateKeyPEM: String) throws {
        let documents = try PEMDocument.parseMultiple(pemString: certificatePEM).filter { $0.discriminator == "CERTIFICATE" }
        guard let leaf = documents.first else { throw SyncError.invalidIdentity("no CERTIFICATE block in the PEM") }
        let certificate = try Certificate(pemDocument: leaf)
        let key = try Certificate.PrivateKey(pemEncoded: privateKeyPEM)
        guard key.publicKey == certificate.publicKey else {
            throw SyncError.invalidIdentity("the private key does not belong to the certificate")
        }
        self.certificateDER = leaf.derBytes
        self.certificatePEM = leaf.pemString
        self.privateKeyPEM = privateKeyPEM
    }

    /// Makes a new self-signed identity valid for ten years, for `hosts`
    /// (DNS names and IP addresses) plus localhost, 127.0.0.1 and ::1.
    ///
    /// The key is P-256; the subject is `commonName` followed by a random suffix, so two nodes never share one.
    /// - Throws: the X.509 library's error should the certificate fail to build (not expected in practice);
    ///   ``SyncError/invalidIdentity(_:)`` should its encoding not round-trip.
    public static func makeSelfSigned(commonName: String, hosts: [String] = []) throws -> TLSIdentity {
        let p256 = P256.Signing.PrivateKey()
        let key = Certificate.PrivateKey(p256)
        // A unique name: trust stores look roots up by subject, and two nodes must not collide.
        let name = try DistinguishedName { CommonName("\(commonName) \(UUID().uuidString.prefix(8))") }
        var sans: [GeneralName] = []
        for host in Set(["localhost", "127.0.0.1", "::1"] + hosts).sorted() {
            if let ip = ipAddressBytes(host) {
                sans.append(.ipAddress(ASN1OctetString(contentBytes: ip[...])))
            } else {
                sans.append(.dnsName(host))
            }
        }
        let skid = SubjectKeyIdentifier(hash: key.publicKey)
        let extensions = try Certificate.Extensions {
            Critical(BasicConstraints.isCertificateAuthority(maxPathLength: 0))
            // keyCertSign: BoringSSL accepts a self-signed certificate as its own trust root only with it.
            Critical(KeyUsage(digitalSignature: true, keyCertSign: true))
            try ExtendedKeyUsage([.serverAuth, .clientAuth])
            SubjectAlternativeNames(sans)
            skid
            AuthorityKeyIdentifier(keyIdentifier: skid.keyIdentifier)
        }
        let now = Date()
        let certificate = try Certificate(
            version: .v3, serialNumber: Certificate.SerialNumber(), publicKey: key.publicKey,
            notValidBefore: now.addingTimeInterval(-3600), notValidAfter: now.addingTimeInterval(10 * 365 * 86400),
            issuer: name, subject: name, signatureAlgorithm: .ecdsaWithSHA256, extensions: extensions, issuerPrivateKey: key)
        var serializer = DER.Serializer()
        try serializer.serialize(certificate)
        return try TLSIdentity(certificatePEM: certificate.serializeAsPEM().pemString, privateKeyPEM: p256.pemRepresentation)
            .checked(der: serializer.serializedBytes)
    }

    private func checked(der: [UInt8]) throws -> TLSIdentity {
        guard der == certificateDER else { throw SyncError.invalidIdentity("certificate DER round trip differs") }
        return self
    }

    /// Loads the identity kept in `directory` (`cert.pem`, `key.pem`), making
    /// and saving a self-signed one for `hosts` the first time.
    public static func persistent(in directory: URL, commonName: String, hosts: () -> [String] = { [] }) throws -> TLSIdentity {
        let certURL = directory.appendingPathComponent("cert.pem")
        let keyURL = directory.appendingPathComponent("key.pem")
        let fm = FileManager.default
        if fm.fileExists(atPath: certURL.path), fm.fileExists(atPath: keyURL.path) {
            do {
                return try TLSIdentity(certificatePEM: String(contentsOf: certURL, encoding: .utf8),
                                       privateKeyPEM: String(contentsOf: keyURL, encoding: .utf8))
            } catch {
                throw SyncError.invalidIdentity("cannot load the TLS identity in \(directory.path): \(error); delete both files to make a new one")
            }
        }
        let identity = try makeSelfSigned(commonName: commonName, hosts: hosts())
        do {
            try fm.createDirectory(at: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            // The key is created 0600 before any byte is written to it.
            guard fm.createFile(atPath: keyURL.path, contents: nil, attributes: [.posixPermissions: 0o600]) else {
                throw SyncError.invalidIdentity("cannot create \(keyURL.path)")
            }
            try Data(identity.privateKeyPEM.utf8).write(to: keyURL)
            try Data(identity.certificatePEM.utf8).write(to: certURL, options: .atomic)
        } catch let error as SyncError {
            throw error
        } catch {
            throw SyncError.invalidIdentity("cannot save the TLS identity in \(directory.path): \(error)")
        }
        return identity
    }

    /// base64url without padding of the SHA-256 of `der`.
    public static func fingerprint(der: [UInt8]) -> String {
        Data(SHA256.hash(data: der)).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    /// Whether `text` has a fingerprint's shape: base64url (no padding) of 32 bytes.
    public static func isFingerprint(_ text: String) -> Bool {
        guard text.count == 43, !text.contains("=") else { return false }
        let standard = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/") + "="
        return Data(base64Encoded: standard)?.count == 32
    }

    /// 4 bytes for IPv4, 16 for IPv6 (network order), nil for a name.
    static func ipAddressBytes(_ text: String) -> [UInt8]? {
        var v4 = in_addr()
        if inet_pton(AF_INET, text, &v4) == 1 { return withUnsafeBytes(of: v4) { Array($0) } }
        var v6 = in6_addr()
        if inet_pton(AF_INET6, text, &v6) == 1 { return withUnsafeBytes(of: v6) { Array($0) } }
        return nil
    }
}

extension TLSIdentity {
    /// True when the DER certificate names itself as issuer and its own key verifies its signature.
    static func isSelfSigned(der: [UInt8]) -> Bool {
        guard let certificate = try? Certificate(derEncoded: der) else { return false }
        return certificate.issuer == certificate.subject
            && certificate.publicKey.isValidSignature(certificate.signature, for: certificate)
    }
}
