import NIOSSL

extension TLSIdentity {
    /// The server-side TLS configuration presenting this identity.
    func serverConfiguration() throws -> TLSConfiguration {
        let certificate = try NIOSSLCertificate(bytes: certificateDER, format: .der)
        let key = try NIOSSLPrivateKey(bytes: Array(privateKeyPEM.utf8), format: .pem)
        var tls = TLSConfiguration.makeServerConfiguration(certificateChain: [.certificate(certificate)], privateKey: .privateKey(key))
        tls.minimumTLSVersion = .tlsv12
        // TLS 1.2 offers AEAD suites only (no CBC with SHA-1); TLS 1.3's are all AEAD. The key is P-256.
        tls.cipherSuiteValues = [
            .TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256, .TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,
            .TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256,
        ]
        // Fail now, not when the server starts accepting.
        _ = try NIOSSLContext(configuration: tls)
        return tls
    }

    /// A client configuration that trusts exactly this certificate (a pin).
    public func pinningClientConfiguration() throws -> TLSConfiguration {
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.trustRoots = .certificates([try NIOSSLCertificate(bytes: certificateDER, format: .der)])
        tls.certificateVerification = .noHostnameVerification
        tls.minimumTLSVersion = .tlsv12
        return tls
    }
}
