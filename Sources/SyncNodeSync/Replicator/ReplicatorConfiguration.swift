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
    /// Local changes go to the peer.
    case push
    /// The peer's changes come here.
    case pull
    /// Both ways: each pass pulls, then pushes.
    case pushAndPull
}

/// HTTP Basic credentials for the peer.
public struct BasicAuthenticator: Sendable, Equatable {
    /// The user name sent with HTTP Basic auth.
    public var username: String
    /// Its password.
    public var password: String

    /// Credentials for a peer that asks for a password.
    public init(username: String, password: String) {
        self.username = username
        self.password = password
    }

    /// The `Authorization` header value.
    package var authorizationHeader: String { "Basic " + Data("\(username):\(password)".utf8).base64EncodedString() }
}

/// What a replication filter knows about a revision besides its body.
public struct DocumentFlags: OptionSet, Sendable, Hashable {
    /// The flags as bits.
    public let rawValue: Int
    /// Flags from their bits.
    public init(rawValue: Int) { self.rawValue = rawValue }
    /// The revision is a deletion (the document passed to the filter is empty).
    public static let deleted = DocumentFlags(rawValue: 1)
    /// The peer revoked access to the document.
    public static let accessRemoved = DocumentFlags(rawValue: 2)
}

/// Decides per revision whether it replicates: true lets it through.
public typealias ReplicationFilter = @Sendable (_ document: Document, _ flags: DocumentFlags) -> Bool

/// What a replicator does (Couchbase Lite's shape).
///
/// ```swift
/// var config = ReplicatorConfiguration(collection: tasks, target: .url(pairingURL))
/// config.replicatorType = .pull
/// config.continuous = true
/// ```
public struct ReplicatorConfiguration: Sendable {
    /// The local collection replicated.
    public var collection: DocumentCollection
    /// The other side.
    public var target: ReplicationEndpoint
    /// Which way to replicate: push, pull or both (the default).
    public var replicatorType: ReplicatorType = .pushAndPull
    /// Keep replicating changes as they happen (``Replicator/start(reset:)``) instead of stopping when caught up.
    public var continuous = false
    /// HTTP Basic credentials; default: the URL's userinfo.
    public var authenticator: BasicAuthenticator?
    /// Extra HTTP headers sent with every request.
    public var headers: [String: String] = [:]
    /// Who the local collection's validator is told writes what this replicator stores
    /// locally; nil: the peer (`WriteAuthor/Origin/replication(peer:)`).
    package var localAuthor: WriteAuthor?
    /// The identity this node presents as its TLS client certificate: a peer
    /// that trusts its fingerprint admits it without a password. Nil presents none.
    public var clientIdentity: TLSIdentity?
    /// The peer's certificate fingerprint (base64url SHA-256) to pin; default: the URL's `fp`.
    public var pinnedFingerprint: String?
    /// The peer's certificate (DER) to pin.
    public var pinnedServerCertificate: [UInt8]?
    /// Trust on first use: accept the peer's certificate only if it is self-signed,
    /// then pin the one seen for every later connection of this replicator
    /// (read it from ``Replicator/serverCertificateFingerprint``).
    public var acceptOnlySelfSignedServerCertificate = false
    /// Whether to create the peer's database when it has none (`PUT /db`, as CouchDB's
    /// `create_target`); the credentials must allow it (a CouchDB server admin).
    public var createTarget = false
    /// The peer node's identity for checkpoints (with the database's name after it); default: the
    /// URL's `uuid`, else what `GET /` reports, else the URL.
    public var remoteUUID: String?
    /// Only these documents (CouchDB's `doc_ids`); excludes ``selector``.
    public var documentIDs: [String]?
    /// Only the documents whose winning revision this Mango selector matches, for example
    /// `["type": "order", "store": "s1"]` (CouchDB's `selector`); excludes ``documentIDs``.
    ///
    /// A peer's feed filters what is pulled (a node's and CouchDB's `_changes?filter=_selector`),
    /// and the local store filters what is pushed; either way SQLite or CouchDB tests it, not this
    /// process. The selector is part of the replication's identity: widening it starts from new
    /// checkpoints, and `_revs_diff` keeps what the target already holds from crossing again. A
    /// document that stops matching stays where it was copied and stops receiving updates. A
    /// deletion passes only when the selector matches the tombstone: add
    /// `{"$or": [{"_deleted": true}, ...]}` to carry deletions.
    public var selector: DocumentValue?
    /// Whether ``documentIDs`` and ``selector`` also choose what a push-and-pull replication
    /// pushes (the default, as they do for a push alone). False: they choose only what is
    /// pulled, and every local change is pushed, as a node that subscribes to part of a hub
    /// still gives the hub all of its own.
    public var filtersPushes = true

    /// Whether ``documentIDs`` or ``selector`` leaves documents out: its two sides differ by design.
    package var isFiltered: Bool { documentIDs != nil || selector != nil }
    /// Which local revisions are pushed (nil: all).
    public var pushFilter: ReplicationFilter?
    /// Which remote revisions are saved locally (nil: all).
    public var pullFilter: ReplicationFilter?
    /// Ends conflicts that pulled revisions create; nil keeps them (CouchDB's behaviour).
    public var conflictResolver: ConflictResolver? = .default
    /// Documents (and revisions) per batch. Larger batches pay the per-batch round trips
    /// and checkpoints less often: 2000 pulled 100,000 documents about 8% faster than 1000,
    /// for about 13 MB more memory at the peak (two batches are in flight).
    public var batchSize = 2000
    /// The most JSON (bodies with inline attachments) sent to the target in one request: a batch
    /// larger than this goes in several. A target that still answers 413 (too large) gets the
    /// request in halves, down to single documents; one that is too large alone is reported
    /// refused, and the replication goes on.
    public var maxRequestBytes = 8 << 20
    /// Asks for the protocol's answers gzip-encoded (`Accept-Encoding: gzip`), and gzip-encodes
    /// large request bodies for a peer that encodes its answers (a SyncNode node). A pull then
    /// moves about a quarter of the bytes, for some CPU on each side: turn it off on a link
    /// faster than the two machines can compress. CouchDB and PouchDB answer as they always do.
    public var compression = true
    /// Attempts before a transient failure stops a one-shot replication (continuous ones retry forever).
    public var maxAttempts = 10
    /// How long a one-shot replication keeps retrying a request that keeps failing before it
    /// stops with the last error (continuous ones retry forever). With ``readTimeout``, this
    /// bounds how long a peer that accepts connections but never answers holds a one-shot
    /// replication: about a minute and a half by default.
    public var maxRetryDuration: Duration = .seconds(60)
    /// The longest wait between attempts.
    public var maxAttemptWaitTime: Duration = .seconds(300)
    /// The waits between attempts: 0.2 s, doubling, at most ``maxAttemptWaitTime``.
    public var retryPolicy: RetryPolicy { RetryPolicy(first: .milliseconds(200), maximum: maxAttemptWaitTime) }
    /// How long a continuous pull's long poll waits for a remote change before asking again;
    /// kept 5 s under ``readTimeout`` (the long poll is silent that long).
    public var heartbeat: Duration = .seconds(25)
    /// How long making a connection may take: TCP connect, then the TLS handshake, each
    /// (also how fast a wrong pin fails).
    public var connectTimeout: Duration = .seconds(5)
    /// How long a request may wait for the peer's first byte of an answer, and then for each
    /// next piece of it, or to take the next piece of an upload, before it fails as a transient
    /// error (CouchDB's replicator waits 30 s too). Downloads and uploads of any size go on as
    /// long as bytes keep moving.
    public var readTimeout: Duration = .seconds(30)
    /// The largest attachment accepted from a peer: one streaming longer than this, or longer
    /// than the length its stub declares, is refused (502) before it fills the disk.
    public var maxAttachmentSize = 16 << 30

    /// Replicates `collection` with `target`. A URL's user info becomes the Basic credentials, its `fp` the pinned certificate fingerprint and its `uuid` the peer's identity for checkpoints.
    public init(collection: DocumentCollection, target: ReplicationEndpoint) {
        self.collection = collection
        self.target = target
        if case .url(let url) = target {
            let components = URLComponents(url: url, resolvingAgainstBaseURL: false)
            if let user = components?.user {
                authenticator = BasicAuthenticator(username: user, password: components?.password ?? "")
            }
            pinnedFingerprint = components?.queryItems?.first { $0.name == "fp" }?.value
            remoteUUID = components?.queryItems?.first { $0.name == "uuid" }?.value
        }
    }
}
