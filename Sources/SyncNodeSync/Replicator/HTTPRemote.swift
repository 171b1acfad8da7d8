import Foundation
import Synchronization
import NIOCore
import NIOHTTP1
import SyncNodeStore

/// A CouchDB-compatible database over HTTP(S), as one side of a replication: the replication
/// protocol's operations, each one request through its ``HTTPTransport``. It assumes nothing
/// SyncNode-specific: sequences are opaque, and a peer without `_bulk_get` is read with
/// `open_revs`. It never touches the local store (pulled attachments are taken in by the
/// receiving side, ``AttachmentIntake``).
final class HTTPRemote: ReplicationPeer, Sendable {
    let transport: HTTPTransport
    let database: String  // the first path segment (a keyspace)
    let configuredUUID: String?
    /// The largest attachment accepted from the peer.
    let maxAttachmentSize: Int
    /// False once the peer refused `_bulk_get` (fetches may run two at a time).
    private let hasBulkGet = Atomic(true)
    /// Whether the peer sends a batch's attachments in one `_bulk_get` answer: nil until asked,
    /// then the one asking (the batch's answers, asked at once, wait for the same welcome).
    let multipartBulkGet = Mutex<Task<Bool, any Error>?>(nil)
    /// The `_rev` of each checkpoint document as last read or written here (nil: there is none),
    /// so that a save sends it without reading the document first: one round trip per checkpoint,
    /// not two.
    private let checkpointRevisions = Mutex<[String: String?]>([:])

    /// Connects: with a pinned fingerprint the certificate is checked first
    /// (a wrong pin fails here, before any request). With trust on first use,
    /// `trusted` is the fingerprint seen before (pinned from then on); the
    /// fingerprint pinned is returned.
    static func connect(_ config: ReplicatorConfiguration, url: URL, trusted: String? = nil) async throws -> (HTTPRemote, pinned: String?) {
        guard let components = URLComponents(url: url, resolvingAgainstBaseURL: false),
              let scheme = components.scheme?.lowercased(), scheme == "http" || scheme == "https",
              let host = components.host else {
            throw SyncError.invalidConfiguration("replication URL must be http(s)://host[:port]/db: \(WireURL.redacted(url))")
        }
        let database = Self.database(in: components) ?? ""
        guard !database.isEmpty else { throw SyncError.invalidConfiguration("replication URL has no database: \(WireURL.redacted(url))") }
        let port = components.port ?? (scheme == "https" ? 443 : 80)
        let (client, pinnedFingerprint) = try await PeerClient.make(
            scheme: scheme, host: host, port: port, pinnedCertificate: config.pinnedServerCertificate,
            pinnedFingerprint: config.pinnedFingerprint ?? trusted, acceptSelfSigned: config.acceptOnlySelfSignedServerCertificate,
            clientIdentity: config.clientIdentity, connectTimeout: config.connectTimeout, readTimeout: config.readTimeout)
        var headers = config.headers.map { ($0.key, $0.value) }
        if let auth = config.authenticator { headers.append(("Authorization", auth.authorizationHeader)) }
        let transport = HTTPTransport(
            root: WireURL.root(scheme: scheme, host: host, port: port), client: client, headers: headers,
            timeouts: PeerTimeouts(connect: config.connectTimeout, read: config.readTimeout), compression: config.compression)
        let remote = HTTPRemote(
            transport: transport, database: database, configuredUUID: config.remoteUUID, maxAttachmentSize: config.maxAttachmentSize)
        return (remote, pinnedFingerprint)
    }

    private init(transport: HTTPTransport, database: String, configuredUUID: String?, maxAttachmentSize: Int) {
        self.transport = transport
        self.database = database
        self.configuredUUID = configuredUUID
        self.maxAttachmentSize = maxAttachmentSize
    }

    func shutdown() async { await transport.shutdown() }

    /// `scheme://host:port`.
    var root: String { transport.root }

    var db: String { "/" + (database.addingPercentEncoding(withAllowedCharacters: .urlPathAllowed.subtracting(CharacterSet(charactersIn: "/"))) ?? database) }

    // MARK: - ReplicationPeer

    /// A peer's identity for checkpoints: its node UUID and the database.
    static func identity(uuid: String, database: String) -> String { "\(uuid)/\(database)" }

    /// The identity a replication URL's target has when its UUID is configured: known without
    /// asking the peer. Nil for a URL that names no database.
    static func identity(of url: URL, uuid: String) -> String? {
        URLComponents(url: url, resolvingAgainstBaseURL: false).flatMap(database(in:)).map { identity(uuid: uuid, database: $0) }
    }

    /// The database a replication URL names: its first path segment (a keyspace).
    private static func database(in components: URLComponents) -> String? {
        components.path.split(separator: "/").first.map(String.init)
    }

    /// Creates the database unless it exists (`PUT /db`; 412 means it does).
    func createDatabase() async throws {
        let (status, text) = try await transport.text(.PUT, db)
        guard PeerStatus.success.contains(status) || status == 412 else { throw PeerStatus.error(status, answer: text) }
    }

    func identity() async throws -> String {
        // The node and the database, however learnt: a pairing URL's uuid and the peer's own
        // `GET /` name the same checkpoints, and two databases of one peer never share one.
        if let configuredUUID { return Self.identity(uuid: configuredUUID, database: database) }
        // Only a peer without `GET /` (404) or without a uuid is named by its URL;
        // a transient failure must not change the replication ID (and lose the checkpoint).
        do {
            if case .string(let uuid)? = try await transport.expect(.GET, "/")["uuid"] { return Self.identity(uuid: uuid, database: database) }
        } catch let error as CouchError where error.status == PeerStatus.notFound {
            // Named by URL below.
        }
        return root + db
    }

    func changes(since: String, limit: Int, filter: ChangeFilter) async throws -> PeerChanges {
        let (method, path, status, text) = try await changesAnswer("", since: since, limit: limit, filter: filter)
        guard PeerStatus.success.contains(status) else { throw PeerStatus.error(status, answer: text) }
        do {
            return try CouchAnswers.changesPage(text)
        } catch {
            throw PeerStatus.notJSON(method, path, status)
        }
    }

    /// Asks `_changes` for a page of every leaf after `since`, with `query` (`&`-joined options)
    /// and the filter's (a filtered request is a POST with its body).
    private func changesAnswer(
        _ query: String, since: String, limit: Int, filter: ChangeFilter
    ) async throws -> (method: HTTPMethod, path: String, status: Int, text: String) {
        var method = HTTPMethod.GET
        var path = "\(db)/_changes?style=all_docs&since=\(WireURL.escape(since))&limit=\(limit)\(query)"
        var body: String?
        if let (filterQuery, json) = filter.changesRequest {
            method = .POST
            path += filterQuery
            body = json
        }
        let (status, text) = try await transport.text(method, path, json: body)
        return (method, path, status, text)
    }

    func revsDiff(_ revs: [String: [String]]) async throws -> [String: MissingRevisions] {
        let body = DocumentValue.dictionary(revs.mapValues { .array($0.map { .string($0) }) })
        let value = try await transport.expect(.POST, "\(db)/_revs_diff", json: body.toJSON())
        guard case .dictionary(let d) = value else { return [:] }
        func strings(_ v: DocumentValue?) -> [String] {
            guard case .array(let a)? = v else { return [] }
            return a.compactMap { $0.stringValue }
        }
        return d.compactMapValues { entry in
            guard case .array? = entry["missing"] else { return nil }
            return MissingRevisions(missing: strings(entry["missing"]), possibleAncestors: strings(entry["possible_ancestors"]))
        }
    }

    func fetch(_ wanted: [WantedRevisions]) async throws -> [WireRevision] {
        // Two halves at once: the peer builds, and this side parses, each on a core of its own.
        if hasBulkGet.load(ordering: .relaxed), wanted.count >= 200 {
            let middle = wanted.count / 2
            async let head = fetchPart(Array(wanted[..<middle]))
            let tail = try await fetchPart(Array(wanted[middle...]))
            return try await head + tail
        }
        return try await fetchPart(wanted)
    }

    /// The revisions with attachment stubs (`att_encoding_info`: CouchDB's digest of a gzip-stored
    /// attachment is of its encoded form, which the check must know). The content follows in
    /// ``download(id:rev:name:declaredLength:into:)``, one attachment at a time, never base64 in a batch.
    private func fetchPart(_ wanted: [WantedRevisions]) async throws -> [WireRevision] {
        if hasBulkGet.load(ordering: .relaxed) {
            // Written straight out: a value tree per revision asked for cost more than the writing.
            var request = JSONWriter(capacity: 16 + wanted.reduce(0) { $0 + $1.revs.count * ($1.id.utf8.count + 64) })
            request.writeRaw(#"{"docs":["#)
            var first = true
            for want in wanted {
                for rev in want.revs {
                    request.writeRaw(first ? #"{"id":"# : #",{"id":"#)
                    first = false
                    request.writeString(want.id)
                    request.writeRaw(#","rev":"#)
                    request.writeString(rev)
                    request.writeRaw("}")
                }
            }
            request.writeRaw("]}")
            let path = "\(db)/_bulk_get?revs=true&latest=true&att_encoding_info=true"
            let (status, text) = try await transport.text(.POST, path, json: request.text)
            if PeerStatus.success.contains(status) {
                return try CouchAnswers.documents(at: [.member("results"), .each, .member("docs"), .each, .member("ok")], in: text, .POST, path, status)
            }
            guard PeerStatus.noBulkGet.contains(status) else { throw PeerStatus.error(status, answer: text) }
            hasBulkGet.store(false, ordering: .relaxed)  // an older CouchDB or another implementation: fall back
        }
        var out: [WireRevision] = []
        for want in wanted {
            let list = DocumentValue.array(want.revs.map { .string($0) }).toJSON()
            let path = "\(db)/\(WireURL.escape(want.id))?revs=true&latest=true&att_encoding_info=true&open_revs=\(WireURL.escape(list))"
            let (status, text) = try await transport.text(.GET, path)
            guard PeerStatus.success.contains(status) else { throw PeerStatus.error(status, answer: text) }
            out += try CouchAnswers.documents(at: [.each, .member("ok")], in: text, .GET, path, status)
        }
        return out
    }

    /// Documents without attachment files go in one `_bulk_docs`; each with files goes on its
    /// own as CouchDB's replicator sends it, a `multipart/related` PUT streamed from the files.
    func store(_ docs: [WireRevision]) async throws -> StoredBatch {
        let plain = docs.filter { $0.files.isEmpty }
        var outcome = plain.isEmpty ? StoredBatch() : try await storeInBulk(plain)
        for doc in docs where !doc.files.isEmpty {
            do {
                try await storeWithFiles(doc)
            } catch let error as CouchError where PeerStatus.documentRefusals.contains(error.status) {
                // The document's own problem (a validator, a size limit): the others go on.
                outcome.refused.append((doc.id, error))
            }
        }
        return outcome
    }

    private func storeInBulk(_ docs: [WireRevision]) async throws -> StoredBatch {
        var body = JSONWriter(capacity: docs.reduce(64) { $0 + $1.body.bytes.count + 256 })
        body.writeRaw(#"{"new_edits":false,"docs":["#)
        for (i, doc) in docs.enumerated() {
            if i > 0 { body.writeRaw(",") }
            doc.write(to: &body)
        }
        body.writeRaw("]}")
        let value = try await transport.expect(.POST, "\(db)/_bulk_docs", json: body.text)
        var outcome = StoredBatch()
        if case .array(let results) = value {
            for result in results {
                if case .string(let error)? = result["error"] {
                    let reason: String
                    if case .string(let r)? = result["reason"] { reason = r } else { reason = "" }
                    let status = error == "forbidden" ? 403 : error == "unauthorized" ? 401 : error == "conflict" ? 409 : 400
                    outcome.refused.append((result["id"].wireText, CouchError(status: status, error: error, reason: reason)))
                }
            }
        }
        return outcome
    }

    private func storeWithFiles(_ doc: WireRevision) async throws {
        var json = JSONWriter(capacity: doc.body.bytes.count + 512)
        doc.write(to: &json)
        let upload = MultipartRelated.Upload(json: json.bytes, files: doc.files)
        let request = transport.request(.PUT, "\(db)/\(WireURL.escape(doc.id))?new_edits=false", body: .upload(upload))
        // A large attachment on a slow link takes long: no deadline, the write timeout catches a stalled transfer.
        let response = try await transport.execute(request, deadline: .seconds(365 * 86_400))
        let status = Int(response.status.code)
        let text = try await transport.text(of: response, upTo: 1 << 20)
        guard PeerStatus.success.contains(status) else { throw PeerStatus.error(status, answer: text) }
    }

    func pendingChanges(since: String) async throws -> Int? {
        // `limit=0` reads no rows: CouchDB and SyncNode nodes count the rest in `pending`.
        try await changes(since: since, limit: 0, filter: .all).pending
    }

    func digestRoot(pendingSince: String?) async throws -> (root: String, pending: Int?)? {
        let pendingQuery = pendingSince.map { "&pending_since=\(WireURL.escape($0))" } ?? ""
        let (status, value) = try await transport.json(.GET, "\(db)/_digest?buckets=false" + pendingQuery)
        // A peer without digests answers 400 or 404 (`_digest` read as a document ID).
        if PeerStatus.noDigest.contains(status) { return nil }
        guard PeerStatus.success.contains(status) else { throw PeerStatus.error(status, value) }
        guard let root = value["root"]?.stringValue else { throw PeerStatus.notJSON(.GET, "\(db)/_digest", status) }
        // A node from before `pending_since` leaves `pending` out: it is then asked by `_changes`.
        guard case .int(let pending)? = value["pending"] else { return (root, nil) }
        return (root, Int(pending))
    }

    func waitForChanges(since: String, limit: Int, timeout: Duration, filter: ChangeFilter, liveSources: [String]) async throws -> PeerChanges? {
        let ms = timeout.components.seconds * 1000
        // Other servers ignore a parameter they do not know; a node reads it.
        let sources = liveSources.isEmpty ? "" : "&live_sources=" + WireURL.escape(DocumentValue.array(liveSources.map { .string($0) }).toJSON())
        // A node's answer then ends with its digest root, which spares the sync check that
        // follows the pass a request (digests cover whole collections: unfiltered feeds only).
        let digest = filter == .all ? "&digest=true" : ""
        // And each small revision comes with its row, which spares the pass its `_bulk_get`.
        let (_, _, status, text) = try await changesAnswer(
            "&feed=longpoll&timeout=\(ms)&revisions=true" + sources + digest, since: since, limit: limit, filter: filter)
        guard PeerStatus.success.contains(status) else { throw PeerStatus.error(status, answer: text) }
        // An answer that is not a page still means "look now": the pass asks again. An empty
        // page (the timeout, or a filtered feed that moved on) is a page like any other.
        return try? CouchAnswers.changesPage(text)
    }

    func ensureFullCommit() async throws {
        // Optional in CouchDB 3, and peers without it answer anything from 404 to 500
        // (django-sofa routes it as a document ID): only a transport failure counts.
        do {
            _ = try await transport.json(.POST, "\(db)/_ensure_full_commit", json: "{}")
        } catch is CouchError {
            // Any answer will do, even one that is not JSON.
        }
    }

    func checkpoint(_ id: String) async throws -> ReplicationCheckpoint? {
        try await storedCheckpoint(id).map(ReplicationCheckpoint.init(json:))
    }

    func saveCheckpoint(_ id: String, _ checkpoint: ReplicationCheckpoint) async throws -> Bool {
        if let known = checkpointRevisions.withLock({ $0[id] }) {
            let (status, value) = try await putCheckpoint(id, checkpoint, rev: known)
            // 409: written by someone else since (another run of this replication), or gone.
            guard status == 409 else {
                guard PeerStatus.success.contains(status) else { throw PeerStatus.error(status, value) }
                // `_local` revisions count up from 0-1, and peers overwrite them without checking
                // the one given: 0-1 over a known later one means this checkpoint was gone. What
                // it vouched for may not be in this database (deleted and made again, or reset):
                // it is saved again vouching for nothing, so the next read starts over.
                guard let known, known != "0-0", value["rev"]?.stringValue == "0-1" else { return true }
                let (status, value) = try await putCheckpoint(id, checkpoint.startingOver, rev: "0-1")
                guard PeerStatus.success.contains(status) else { throw PeerStatus.error(status, value) }
                return false
            }
        }
        let current = try await storedCheckpoint(id)
        let (status, value) = try await putCheckpoint(id, checkpoint, rev: current?["_rev"]?.stringValue)
        guard PeerStatus.success.contains(status) else { throw PeerStatus.error(status, value) }
        return true
    }

    /// PUTs a checkpoint document over revision `rev`, and remembers the revision it got.
    private func putCheckpoint(_ id: String, _ checkpoint: ReplicationCheckpoint, rev: String?) async throws -> (status: Int, value: DocumentValue) {
        var body = checkpoint.json
        if let rev { body["_rev"] = .string(rev) }
        let (status, value) = try await transport.json(.PUT, "\(db)/_local/\(WireURL.escape(id))", json: DocumentValue.dictionary(body).toJSON())
        let saved = PeerStatus.success.contains(status) ? value["rev"]?.stringValue : nil
        checkpointRevisions.withLock {
            // A failed save, or an answer without its revision, leaves it unknown: the next save reads it.
            if let saved { $0[id] = .some(saved) } else { _ = $0.removeValue(forKey: id) }
        }
        return (status, value)
    }

    /// The checkpoint document as stored, with its `_rev` (remembered for the next save).
    private func storedCheckpoint(_ id: String) async throws -> [String: DocumentValue]? {
        let (status, value) = try await transport.json(.GET, "\(db)/_local/\(WireURL.escape(id))")
        if status == PeerStatus.notFound {
            checkpointRevisions.withLock { $0[id] = .some(nil) }
            return nil
        }
        guard PeerStatus.success.contains(status), case .dictionary(let d) = value else { throw PeerStatus.error(status, value) }
        checkpointRevisions.withLock { $0[id] = .some(d["_rev"]?.stringValue) }
        return d
    }
}
