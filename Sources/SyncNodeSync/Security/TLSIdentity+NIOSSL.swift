import NIOSSL

extension TLSIdentity {
    /// The server-side TLS configuration presenting this identity.
    func serverConfiguration() throws -> TLSConfiguration {
        let certificate = try NIOSSLCertificate(bytes: certificateDER, format: .der)
        let key = try NIOSSLPrivateKey(bytes: Array(privateKeyPEM.utf8), format: .pem)
        var tls = TLSConfiguration.makeServerConfiguration(certificateChain: [.certificate(certificate)], privateKey: .privateKey(key))
        tls.minimumTLSVersion = .tlsv12
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
