import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import SyncNodeStore
import SyncNodeSync

/// Asks a node who it is: `GET /` over a connection whose certificate is
/// checked against the fingerprint the node claims. Discovery keeps one per
/// peer address and asks again every few seconds: the first call pins the
/// certificate (one extra handshake), later ones reuse the kept-alive connection.
///
/// Credentials the node refuses are not sent again: each refusal counts
/// against the node's failed-login limit, which would lock out every client
/// on this address.
public actor NodeProbe {
    /// What a probe learnt.
    public enum Answer: Sendable, Equatable {
        /// `GET /` answered with this `uuid`.
        case uuid(String)
        /// The node wants credentials that were missing or refused, or is rate-limiting them
        /// (it answered, over TLS with the expected certificate when one was given).
        case unauthorized
    }

    private let scheme: String
    private let host: String
    private let port: Int
    private let fingerprint: String?
    private let timeout: Duration
    private let clientIdentity: TLSIdentity?
    private var authorization: String?
    private var client: HTTPClient?
    /// Set by ``shutdown()``: a connection still being made then is closed, not kept.
    private var isShutDown = false

    /// A probe of the node whose root is `scheme://host:port`.
    /// - parameters:
    ///   - scheme: `https` or `http`.
    ///   - host: the node's address or host name.
    ///   - port: the node's listener port.
    ///   - fingerprint: the certificate fingerprint to pin (https only).
    ///   - authenticator: credentials for `GET /`; nil asks without.
    ///   - timeout: how long connecting and each answer may take.
    ///   - clientIdentity: presented as the client certificate (a node that trusts it lets it in
    ///     without a password).
    public init(scheme: String, host: String, port: Int, fingerprint: String?, authenticator: BasicAuthenticator?, timeout: Duration,
                clientIdentity: TLSIdentity? = nil) {
        self.scheme = scheme
        self.host = host
        self.port = port
        self.fingerprint = fingerprint
        self.timeout = timeout
        self.clientIdentity = clientIdentity
        authorization = authenticator?.authorizationHeader
    }

    /// Asks once. A 401 (whose credentials are dropped) or 429 answer is ``Answer/unauthorized``, not
    /// an error.
    /// - Throws: `SyncError.invalidIdentity` for a certificate other than the pinned one;
    ///   `SyncError.connectionFailed` or the HTTP client's error when the node cannot be reached;
    ///   `CouchError` (`not_a_node`, with the HTTP status) for an answer without a node `uuid`;
    ///   `CancellationError` when the probe was shut down while connecting.
    public func identify() async throws -> Answer {
        let (status, body) = try await get("/")
        if status == .unauthorized || status == .tooManyRequests { return .unauthorized }
        guard status == .ok, case .dictionary(let info)? = body, case .string(let uuid)? = info["uuid"] else {
            throw CouchError(status: Int(status.code), error: "not_a_node", reason: "GET \(root)/ did not answer with a node uuid")
        }
        return .uuid(uuid)
    }

    /// The node's name as its welcome (`GET /`) gives it; nil when it gives none (a CouchDB, a
    /// bare listener).
    /// - Throws: as ``identify()``.
    public func name() async throws -> String? {
        let (status, body) = try await get("/")
        guard status == .ok, case .dictionary(let info)? = body, case .string(let name)? = info["name"], !name.isEmpty else { return nil }
        return name
    }

    /// The keyspaces the node lets this client replicate (`GET /_node/keyspaces`): its
    /// databases and their other collections as `db.scope.collection`. An entry that is no
    /// keyspace is skipped.
    /// - Throws: as ``identify()``; `CouchError` with the node's status when it refuses.
    public func keyspaces() async throws -> [Keyspace] {
        let (status, body) = try await get("/_node/keyspaces")
        guard status == .ok, case .array(let names)? = body else {
            throw CouchError(status: Int(status.code), error: "no_keyspaces", reason: "GET \(root)/_node/keyspaces did not answer with a list")
        }
        return names.compactMap { $0.stringValue.flatMap(Keyspace.init) }
    }

    private var root: String { WireURL.root(scheme: scheme, host: host, port: port) }

    /// `GET path` over the kept connection: the status, and the body as JSON when it is.
    private func get(_ path: String) async throws -> (HTTPResponseStatus, DocumentValue?) {
        let client = try await connectedClient()
        var request = HTTPClientRequest(url: root + path)
        request.headers.add(name: "Accept", value: "application/json")
        if let authorization { request.headers.add(name: "Authorization", value: authorization) }
        let response = try await client.execute(request, timeout: .init(timeout))
        let body = try await response.body.collect(upTo: 1 << 20)
        // Credentials the node refused are not sent again (each refusal counts against its login limit).
        // A 429 only says "slower": the credentials may be right, and a probe kept for a paired
        // peer would otherwise ask without them for good.
        if response.status == .unauthorized { authorization = nil }
        return (response.status, try? DocumentValue(json: String(buffer: body)))
    }

    /// Closes the connection.
    public func shutdown() async {
        isShutDown = true
        let kept = client
        client = nil
        try? await kept?.shutdown()
    }

    private func connectedClient() async throws -> HTTPClient {
        if let client { return client }
        let (made, _) = try await PeerClient.make(
            scheme: scheme, host: host, port: port, pinnedFingerprint: fingerprint, clientIdentity: clientIdentity, connectTimeout: timeout)
        // Shut down meanwhile (actor reentrancy): a client nobody will shut down must not be kept.
        if isShutDown {
            try? await made.shutdown()
            throw CancellationError()
        }
        // Another call may have connected meanwhile: keep one client.
        if let client {
            try? await made.shutdown()
            return client
        }
        client = made
        return made
    }
}
