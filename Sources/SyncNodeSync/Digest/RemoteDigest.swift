import AsyncHTTPClient
import Foundation
import NIOCore
import SyncNodeStore

/// A peer's collection digest over HTTP(S): `GET /{keyspace}/_digest`, and `?bucket=K` for a
/// bucket's entries. A peer without `_digest` (CouchDB, PouchDB) is read through its `_changes`
/// feed instead, a page at a time, and its digest computed here (``readChangesInstead``).
public actor RemoteDigest: DigestSource {
    private let transport: HTTPTransport
    private let keyspace: String
    private let timeout: Duration
    /// The bytes of every answer body read so far.
    public private(set) var bytesReceived = 0
    /// True once the peer turned out to have no `_digest` and its `_changes` feed was read instead.
    public private(set) var readChangesInstead = false
    /// With `_changes` read: every document's entry, by bucket.
    private var entriesByBucket: [[CollectionDigest.Entry]]?

    private init(transport: HTTPTransport, keyspace: String, timeout: Duration) {
        self.transport = transport
        self.keyspace = keyspace
        self.timeout = timeout
    }

    private var root: String { transport.root }

    /// Connects to the peer of `url` (http or https; `user:password@` signs in with Basic auth,
    /// `fp=` pins the peer's certificate, as pairing URLs carry it). `keyspace` defaults to the
    /// URL's first path segment. `identity` is presented as a client certificate, so a peer that
    /// trusts this node lets it in without a password.
    public static func connect(url: URL, keyspace: String? = nil, identity: TLSIdentity? = nil, timeout: Duration = .seconds(30)) async throws -> RemoteDigest {
        guard let components = URLComponents(url: url, resolvingAgainstBaseURL: false),
              let scheme = components.scheme?.lowercased(), scheme == "http" || scheme == "https", let host = components.host,
              let name = keyspace ?? components.path.split(separator: "/").first.map(String.init), !name.isEmpty else {
            throw SyncError.invalidConfiguration("not an http(s) URL of a database: \(WireURL.redacted(url))")
        }
        let port = components.port ?? (scheme == "https" ? 443 : 80)
        let fingerprint = components.queryItems?.first { $0.name == "fp" }?.value
        let (client, _) = try await PeerClient.make(
            scheme: scheme, host: host, port: port, pinnedFingerprint: fingerprint, clientIdentity: identity,
            connectTimeout: .seconds(5), readTimeout: timeout)
        var headers: [(String, String)] = []
        if let user = components.user {
            let credential = Data("\(user.removingPercentEncoding ?? user):\((components.password ?? "").removingPercentEncoding ?? "")".utf8)
            headers.append(("Authorization", "Basic " + credential.base64EncodedString()))
        }
        let transport = HTTPTransport(
            root: WireURL.root(scheme: scheme, host: host, port: port), client: client, headers: headers,
            timeouts: PeerTimeouts(connect: .seconds(5), read: timeout))
        return RemoteDigest(transport: transport, keyspace: name, timeout: timeout)
    }

    /// Closes the connections.
    public func shutdown() async { await transport.shutdown() }

    public func digest() async throws -> CollectionDigest {
        if let entriesByBucket { return CollectionDigest(entries: entriesByBucket.joined()) }
        let (status, body) = try await get("/\(path(keyspace))/_digest")
        if status == 200 {
            guard case .array(let rows)? = body["buckets"], let digest = CollectionDigest(buckets: rows.compactMap(Self.bucket)) else {
                throw CouchError(status: 502, error: "bad_gateway", reason: "\(root): its _digest answer is not a digest")
            }
            return digest
        }
        try check(status, body)
        // No `_digest` on a database that exists: a CouchDB or PouchDB.
        let (exists, info) = try await get("/\(path(keyspace))")
        try check(exists, info)
        guard exists == 200 else { throw Self.failure(exists, info, root) }
        let entries = try await changesFeed()
        readChangesInstead = true
        var buckets = [[CollectionDigest.Entry]](repeating: [], count: CollectionDigest.bucketCount)
        for entry in entries { buckets[CollectionDigest.bucket(of: entry.id)].append(entry) }
        entriesByBucket = buckets.map { $0.sorted { $0.id < $1.id } }
        return CollectionDigest(entries: entries)
    }

    public func digestEntries(inBucket bucket: Int) async throws -> [CollectionDigest.Entry] {
        if let entriesByBucket { return entriesByBucket[bucket] }
        return try await entries("/\(path(keyspace))/_digest?bucket=\(bucket)")
    }

    /// The `entries` of a `_digest?bucket=` answer.
    private func entries(_ target: String) async throws -> [CollectionDigest.Entry] {
        let (status, body) = try await get(target)
        guard status == 200 else { throw Self.failure(status, body, root) }
        return try Self.entries(of: body, root)
    }

    private static func entries(of body: DocumentValue, _ root: String) throws -> [CollectionDigest.Entry] {
        guard case .array(let rows)? = body["entries"] else { throw failure(200, body, root) }
        // A node of an earlier version lists its tombstones too: left out, as digests leave them.
        return rows.compactMap { row in
            guard case .string(let id)? = row["id"], case .string(let rev)? = row["rev"], row["deleted"] != .bool(true) else { return nil }
            return CollectionDigest.Entry(id: id, revisionID: rev, isDeleted: row["deleted"] == .bool(true))
        }
    }

    public func digestSubBuckets(ofBucket bucket: Int) async throws -> [CollectionDigest.Bucket] {
        if let entriesByBucket { return CollectionDigest.subBuckets(of: entriesByBucket[bucket]) }
        let (status, body) = try await get("/\(path(keyspace))/_digest?bucket=\(bucket)&subbuckets=true")
        guard status == 200 else { throw Self.failure(status, body, root) }
        guard case .array(let rows)? = body["subbuckets"] else {
            // A node from before sub-buckets ignores the option and lists the bucket: summed here.
            return CollectionDigest.subBuckets(of: try Self.entries(of: body, root))
        }
        let buckets = rows.compactMap(Self.bucket)
        guard buckets.count == CollectionDigest.bucketCount else {
            throw CouchError(status: 502, error: "bad_gateway", reason: "\(root): its sub-buckets of bucket \(bucket) are not \(CollectionDigest.bucketCount) summaries")
        }
        return buckets
    }

    public func digestEntries(inBucket bucket: Int, subBucket: Int) async throws -> [CollectionDigest.Entry] {
        if let entriesByBucket { return entriesByBucket[bucket].filter { CollectionDigest.subBucket(of: $0.id) == subBucket } }
        // Filtered here too: a node from before sub-buckets ignores `sub` and lists the whole bucket.
        return try await entries("/\(path(keyspace))/_digest?bucket=\(bucket)&sub=\(subBucket)")
            .filter { CollectionDigest.subBucket(of: $0.id) == subBucket }
    }

    /// Every live document's winning revision, from `_changes` a page at a time (a document
    /// listed twice, as a cluster's shards may, keeps its last entry; deleted ones are left out
    /// at the end, as digests leave them).
    private func changesFeed() async throws -> [CollectionDigest.Entry] {
        var latest: [String: CollectionDigest.Entry] = [:]
        var since = "0"
        while true {
            let query = "style=main_only&limit=5000&since=" + (since.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? since)
            let (status, body) = try await get("/\(path(keyspace))/_changes?\(query)")
            guard status == 200, case .array(let results)? = body["results"] else { throw Self.failure(status, body, root) }
            for result in results {
                guard case .string(let id)? = result["id"], case .array(let changes)? = result["changes"],
                      case .string(let rev)? = changes.first?["rev"] else { continue }
                latest[id] = CollectionDigest.Entry(id: id, revisionID: rev, isDeleted: result["deleted"] == .bool(true))
            }
            guard !results.isEmpty, let last = body["last_seq"] else { break }
            let next: String
            if case .string(let text) = last { next = text } else { next = last.toJSON() }
            // A peer whose feed does not move on would otherwise be read forever.
            guard next != since else { throw CouchError(status: 502, error: "bad_gateway", reason: "\(root): its _changes feed repeats since \(since)") }
            since = next
        }
        return latest.values.filter { !$0.isDeleted }
    }

    private func get(_ target: String) async throws -> (Int, DocumentValue) {
        let response = try await transport.execute(transport.request(.GET, target), deadline: timeout)
        let data = try await transport.body(of: response, upTo: 256 << 20)
        bytesReceived += data.readableBytes
        return (Int(response.status.code), (try? DocumentValue(json: String(buffer: data))) ?? .null)
    }

    /// Refusals stop the comparison with the peer's words.
    private func check(_ status: Int, _ body: DocumentValue) throws {
        if PeerStatus.refused.contains(status) { throw Self.failure(status, body, root) }
    }

    private static func failure(_ status: Int, _ body: DocumentValue, _ root: String) -> CouchError {
        if case .string(let error)? = body["error"], case .string(let reason)? = body["reason"] {
            return CouchError(status: status, error: error, reason: "\(root): \(reason)")
        }
        return CouchError(status: 502, error: "bad_gateway", reason: "\(root) answered HTTP \(status)")
    }

    private static func bucket(_ row: DocumentValue) -> CollectionDigest.Bucket? {
        guard case .int(let count)? = row["count"], case .int(let deleted)? = row["deleted"], case .string(let hash)? = row["hash"] else { return nil }
        return CollectionDigest.Bucket(count: Int(count), deleted: Int(deleted), hash: hash)
    }

    private func path(_ name: String) -> String {
        name.addingPercentEncoding(withAllowedCharacters: .urlPathAllowed.subtracting(CharacterSet(charactersIn: "/"))) ?? name
    }
}
