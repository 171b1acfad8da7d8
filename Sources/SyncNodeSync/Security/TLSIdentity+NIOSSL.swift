import HummingbirdTLS
import NIOSSL

extension TLSIdentity {
    /// The server-side TLS configuration presenting this identity. When
    /// `acceptingClientCertificates`, clients are asked for a certificate (and
    /// may send none): any is accepted in the handshake, and the listener decides
    /// by its fingerprint whom it belongs to (a self-signed peer identity has no
    /// authority to check it against).
    func serverConfiguration(acceptingClientCertificates: Bool) throws -> TLSChannelConfiguration {
        let tls = try serverTLSConfiguration(requestingClientCertificate: acceptingClientCertificates)
        guard acceptingClientCertificates else { return TLSChannelConfiguration(tlsConfiguration: tls) }
        return TLSChannelConfiguration(tlsConfiguration: tls, customVerificationCallback: { _, promise in
            promise.succeed(.certificateVerified)
        })
    }

    private func serverTLSConfiguration(requestingClientCertificate: Bool) throws -> TLSConfiguration {
        let certificate = try NIOSSLCertificate(bytes: certificateDER, format: .der)
        let key = try NIOSSLPrivateKey(bytes: Array(privateKeyPEM.utf8), format: .pem)
        var tls = TLSConfiguration.makeServerConfiguration(certificateChain: [.certificate(certificate)], privateKey: .privateKey(key))
        tls.minimumTLSVersion = .tlsv12
        // TLS 1.2 offers AEAD suites only (no CBC with SHA-1); TLS 1.3's are all AEAD. The key is P-256.
        tls.cipherSuiteValues = [
            .TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256, .TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,
            .TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256,
        ]
        if requestingClientCertificate { tls.certificateVerification = .optionalVerification }
        // A graceful stop closes connections that peers' long polls hold open; waiting NIOSSL's
        // default 5 s for each client's close_notify made every such stop take 5 s.
        tls.shutdownTimeout = .milliseconds(100)
        // Fail now, not when the server starts accepting.
        _ = try NIOSSLContext(configuration: tls)
        return tls
    }

    /// Presents this identity as the client certificate of `tls` (mutual TLS: a node signs in to its peers so).
    func presentAsClient(in tls: inout TLSConfiguration) throws {
        tls.certificateChain = [.certificate(try NIOSSLCertificate(bytes: certificateDER, format: .der))]
        tls.privateKey = .privateKey(try NIOSSLPrivateKey(bytes: Array(privateKeyPEM.utf8), format: .pem))
    }

    /// A client configuration that trusts exactly this certificate (a pin), without checking host names,
    /// TLS 1.2 or later.
    /// - Throws: NIOSSL's error when the certificate cannot be loaded.
    public func pinningClientConfiguration() throws -> TLSConfiguration {
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.trustRoots = .certificates([try NIOSSLCertificate(bytes: certificateDER, format: .der)])
        tls.certificateVerification = .noHostnameVerification
        tls.minimumTLSVersion = .tlsv12
        return tls
    }
}
