import Foundation
import SyncNodeStore

/// Where a replicator syncs to.
public enum ReplicationEndpoint: Sendable {
    /// A CouchDB-protocol database over HTTP(S): `https://[user:password@]host:port/db`,
    /// optionally a pairing URL with `uuid` and `fp` query items.
    case url(URL)
    /// Another local collection (local-to-local replication).
    case collection(DocumentCollection)
}

/// The direction of a replication.
public enum ReplicatorType: Sendable {
    case push, pull, pushAndPull
}

/// What a replicator does (Couchbase Lite's shape).
public struct ReplicatorConfiguration: Sendable {
    /// The local collection replicated.
    public var collection: DocumentCollection
    /// The other side.
    public var target: ReplicationEndpoint
    public var replicatorType: ReplicatorType = .pushAndPull
    /// HTTP Basic credentials; default: the URL's userinfo.
    public var username: String?
    public var password: String?
    /// Extra HTTP headers sent with every request.
    public var headers: [String: String] = [:]
    /// The peer's certificate fingerprint (base64url SHA-256) to pin; default: the URL's `fp`.
    public var pinnedFingerprint: String?
    /// The peer's certificate (DER) to pin.
    public var pinnedServerCertificate: [UInt8]?
    /// The peer's identity for checkpoints; default: the URL's `uuid`, else what `GET /` reports, else the URL.
    public var remoteUUID: String?
    /// Only these documents.
    public var documentIDs: [String]?
    /// Documents (and revisions) per batch.
    public var batchSize = 500
    /// Attempts before a transient failure stops a one-shot replication.
    public var maxAttempts = 10
    /// The longest wait between attempts.
    public var maxAttemptWaitTime: Duration = .seconds(300)
    /// TCP connect timeout (also how fast a wrong pin fails).
    public var connectTimeout: Duration = .seconds(5)

    public init(collection: DocumentCollection, target: ReplicationEndpoint) {
        self.collection = collection
        self.target = target
        if case .url(let url) = target {
            let components = URLComponents(url: url, resolvingAgainstBaseURL: false)
            username = components?.user
            password = components?.password
            pinnedFingerprint = components?.queryItems?.first { $0.name == "fp" }?.value
            remoteUUID = components?.queryItems?.first { $0.name == "uuid" }?.value
        }
    }
}
