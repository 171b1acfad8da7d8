import AsyncHTTPClient
import Foundation
import Synchronization
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL
import SyncNodeStore

/// A CouchDB-compatible database over HTTP(S), as one side of a replication.
/// It assumes nothing SyncNode-specific: sequences are opaque, and a peer
/// without `_bulk_get` is read with `open_revs`.
final class HTTPRemote: ReplicationPeer, Sendable {
    let root: String      // scheme://host:port
    let database: String  // the first path segment (a keyspace)
    let client: HTTPClient
    let headers: [(String, String)]
    let configuredUUID: String?
    let timeouts: PeerTimeouts
    /// The largest attachment accepted from the peer.
    let maxAttachmentSize: Int
    /// False once the peer refused `_bulk_get` (fetches may run two at a time).
    private let hasBulkGet = Atomic(true)

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
        let remote = HTTPRemote(
            root: WireURL.root(scheme: scheme, host: host, port: port), database: database, client: client, headers: headers,
            configuredUUID: config.remoteUUID,
            timeouts: PeerTimeouts(connect: config.connectTimeout, read: config.readTimeout), maxAttachmentSize: config.maxAttachmentSize)
        return (remote, pinnedFingerprint)
    }

    private init(
        root: String, database: String, client: HTTPClient, headers: [(String, String)], configuredUUID: String?,
        timeouts: PeerTimeouts, maxAttachmentSize: Int
    ) {
        self.timeouts = timeouts
        self.maxAttachmentSize = maxAttachmentSize
        self.root = root
        self.database = database
        self.client = client
        self.headers = headers
        self.configuredUUID = configuredUUID
    }

    func shutdown() async { try? await client.shutdown() }

    /// Sends `request`. The deadline is for the answer's head; its body, and an upload, go on
    /// while bytes keep moving (the read and write timeouts). Timeouts come back in words.
    func execute(_ request: HTTPClientRequest, deadline: Duration = .seconds(300)) async throws -> HTTPClientResponse {
        do {
            return try await client.execute(request, timeout: .init(deadline))
        } catch {
            throw timeouts.describe(error, peer: root)
        }
    }

    // MARK: - HTTP

    private func send(_ method: HTTPMethod, _ path: String, _ body: DocumentValue? = nil) async throws -> (Int, DocumentValue) {
        try await send(method, path, json: body?.toJSON())
    }

    private func send(_ method: HTTPMethod, _ path: String, json body: String?) async throws -> (Int, DocumentValue) {
        let (status, text) = try await sendText(method, path, json: body)
        guard let value = try? DocumentValue(json: text) else {
            // A proxy's HTML page must not read as an empty answer ("nothing missing", "nothing refused").
            guard (200..<300).contains(status) else { return (status, .null) }
            throw Self.notJSON(method, path, status)
        }
        return (status, value)
    }

    /// The answer's status and text, unparsed (documents are split from it as text).
    private func sendText(_ method: HTTPMethod, _ path: String, json body: String?) async throws -> (Int, String) {
        var request = HTTPClientRequest(url: root + path)
        request.method = method
        request.headers.add(name: "Accept", value: "application/json")
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        if let body {
            request.headers.add(name: "Content-Type", value: "application/json")
            request.body = .bytes(ByteBuffer(string: body))
        }
        let response: HTTPClientResponse
        do {
            response = try await execute(request)
        } catch let error as NIOSSLError {
            guard case .handshakeFailed = error else { throw error }
            // A certificate no retry will change: stop with what to do, not after minutes of backoff.
            throw SyncError.invalidIdentity("TLS with \(root) failed (\(error)); pin the peer's certificate with a pairing URL (fp=...) or accept it on first use (acceptOnlySelfSignedServerCertificate)")
        }
        let data: ByteBuffer
        do {
            data = try await response.body.collect(upTo: 1 << 30)
        } catch {
            throw timeouts.describe(error, peer: root)
        }
        return (Int(response.status.code), String(buffer: data))
    }

    private static func notJSON(_ method: HTTPMethod, _ path: String, _ status: Int) -> CouchError {
        CouchError(status: 502, error: "bad_gateway", reason: "\(method) \(path) answered HTTP \(status) with a body that is not JSON")
    }

    /// The documents at `path` in a 2xx answer, split and canonicalized from
    /// its text; entries that are not objects are skipped. Malformed JSON is a
    /// bad gateway (retried), not a store error (which would stop the replicator).
    private static func documents(at path: [JSONSkimmer.Step], in text: String, _ method: HTTPMethod, _ url: String, _ status: Int) throws -> [WireRevision] {
        do {
            var scratch: [UInt8] = []
            scratch.reserveCapacity(64 * 1024)
            return try JSONSkimmer.values(at: path, in: text) { input, start throws(StoreError) in
                input[start] == UInt8(ascii: "{") ? try WireRevision.read(in: input, at: start, scratch: &scratch) : nil
            }
        } catch {
            throw notJSON(method, url, status)
        }
    }

    /// A 2xx answer's body, or the peer's error.
    private func expect(_ method: HTTPMethod, _ path: String, _ body: DocumentValue? = nil) async throws -> DocumentValue {
        try await expect(method, path, json: body?.toJSON())
    }

    private func expect(_ method: HTTPMethod, _ path: String, json body: String?) async throws -> DocumentValue {
        let (status, value) = try await send(method, path, json: body)
        guard (200..<300).contains(status) else { throw Self.error(status, value) }
        return value
    }

    static func error(_ status: Int, _ value: DocumentValue) -> CouchError {
        if case .dictionary(let d) = value, case .string(let e)? = d["error"] {
            let reason: String
            if case .string(let r)? = d["reason"] { reason = r } else { reason = "" }
            return CouchError(status: status, error: e, reason: reason)
        }
        return CouchError(status: status, error: "http_error", reason: "HTTP \(status)")
    }

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

    func identity() async throws -> String {
        // The node and the database, however learnt: a pairing URL's uuid and the peer's own
        // `GET /` name the same checkpoints, and two databases of one peer never share one.
        if let configuredUUID { return Self.identity(uuid: configuredUUID, database: database) }
        // Only a peer without `GET /` (404) or without a uuid is named by its URL;
        // a transient failure must not change the replication ID (and lose the checkpoint).
        do {
            if case .string(let uuid)? = try await expect(.GET, "/")["uuid"] { return Self.identity(uuid: uuid, database: database) }
        } catch let error as CouchError where error.status == 404 {
            // Named by URL below.
        }
        return root + db
    }

    func changes(since: String, limit: Int, documentIDs: [String]?) async throws -> PeerChanges {
        let since = WireURL.escape(since)
        var method = HTTPMethod.GET
        var path = "\(db)/_changes?style=all_docs&since=\(since)&limit=\(limit)"
        var body: String?
        if let documentIDs {
            method = .POST
            path += "&filter=_doc_ids"
            body = DocumentValue.dictionary(["doc_ids": .array(documentIDs.map { .string($0) })]).toJSON()
        }
        let (status, text) = try await sendText(method, path, json: body)
        guard (200..<300).contains(status) else { throw Self.error(status, (try? DocumentValue(json: text)) ?? .null) }
        do {
            return try Self.changesPage(text)
        } catch {
            throw Self.notJSON(method, path, status)
        }
    }

    /// A `_changes` answer read row by row where it stands: a page holds thousands of rows, and
    /// a value tree of each cost a tenth of a pull's CPU. Rows without `id` or `changes` are skipped.
    static func changesPage(_ text: String) throws(StoreError) -> PeerChanges {
        var lastSeq: DocumentValue?
        var pending: Int?
        var rows: [PeerChange] = []
        try JSONParser.reading(text) { input, start throws(StoreError) in
            ((), try JSONParser.members(ofObjectIn: input, at: start, depth: 0) { name, at throws(StoreError) in
                guard name == "results" else {
                    let (value, end) = try JSONParser.parseValue(in: input, at: at, depth: 1)
                    if name == "last_seq" { lastSeq = value }
                    if name == "pending", case .int(let n) = value { pending = Int(n) }
                    return end
                }
                return try JSONParser.elements(ofArrayIn: input, at: at, depth: 1) { row throws(StoreError) in
                    let (change, end) = try changeRow(in: input, at: row)
                    if let change { rows.append(change) }
                    return end
                }
            })
        }
        return PeerChanges(rows: rows, lastSeq: WireURL.sequenceText(lastSeq), pending: pending)
    }

    /// One row of a `_changes` answer, and where it ends; nil for a row without `id` or `changes`.
    private static func changeRow(in input: UnsafeBufferPointer<UInt8>, at start: Int) throws(StoreError) -> (PeerChange?, end: Int) {
        func starts(_ at: Int, with byte: Character) -> Bool { at < input.count && input[at] == byte.asciiValue }
        var id: String?
        var seq: DocumentValue?
        var revs: [String]?
        let end = try JSONParser.members(ofObjectIn: input, at: start, depth: 2) { name, at throws(StoreError) in
            guard name == "changes", starts(at, with: "[") else {
                let (value, end) = try JSONParser.parseValue(in: input, at: at, depth: 3)
                if name == "id", case .string(let s) = value { id = s }
                if name == "seq" { seq = value }
                return end
            }
            var found: [String] = []
            let end = try JSONParser.elements(ofArrayIn: input, at: at, depth: 3) { change throws(StoreError) in
                guard starts(change, with: "{") else { return try JSONParser.parseValue(in: input, at: change, depth: 4).end }
                return try JSONParser.members(ofObjectIn: input, at: change, depth: 4) { name, at throws(StoreError) in
                    let (value, end) = try JSONParser.parseValue(in: input, at: at, depth: 5)
                    if name == "rev", case .string(let rev) = value { found.append(rev) }
                    return end
                }
            }
            revs = found
            return end
        }
        guard let id, let revs else { return (nil, end) }
        return (PeerChange(seq: WireURL.sequenceText(seq), id: id, revs: revs), end)
    }

    func revsDiff(_ revs: [String: [String]]) async throws -> [String: MissingRevisions] {
        let body = DocumentValue.dictionary(revs.mapValues { .array($0.map { .string($0) }) })
        let value = try await expect(.POST, "\(db)/_revs_diff", body)
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
            let (status, text) = try await sendText(.POST, path, json: request.text)
            if (200..<300).contains(status) {
                return try Self.documents(at: [.member("results"), .each, .member("docs"), .each, .member("ok")], in: text, .POST, path, status)
            }
            let value = (try? DocumentValue(json: text)) ?? .null
            guard [400, 404, 405, 501].contains(status) else { throw Self.error(status, value) }
            hasBulkGet.store(false, ordering: .relaxed)  // an older CouchDB or another implementation: fall back
        }
        var out: [WireRevision] = []
        for want in wanted {
            let list = DocumentValue.array(want.revs.map { .string($0) }).toJSON()
            let path = "\(db)/\(WireURL.escape(want.id))?revs=true&latest=true&att_encoding_info=true&open_revs=\(WireURL.escape(list))"
            let (status, text) = try await sendText(.GET, path, json: nil)
            guard (200..<300).contains(status) else { throw Self.error(status, (try? DocumentValue(json: text)) ?? .null) }
            out += try Self.documents(at: [.each, .member("ok")], in: text, .GET, path, status)
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
            } catch let error as CouchError where [400, 403, 409, 412, 413, 415].contains(error.status) {
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
        let value = try await expect(.POST, "\(db)/_bulk_docs", json: body.text)
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
        var request = HTTPClientRequest(url: root + "\(db)/\(WireURL.escape(doc.id))?new_edits=false")
        request.method = .PUT
        request.headers.add(name: "Accept", value: "application/json")
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        request.headers.add(name: "Content-Type", value: upload.contentType)
        request.body = .stream(upload, length: .known(Int64(upload.length)))
        // A large attachment on a slow link takes long: no deadline, the write timeout catches a stalled transfer.
        let response = try await execute(request, deadline: .seconds(365 * 86_400))
        let status = Int(response.status.code)
        let text = String(buffer: try await response.body.collect(upTo: 1 << 20))
        guard (200..<300).contains(status) else { throw Self.error(status, (try? DocumentValue(json: text)) ?? .null) }
    }

    func pendingChanges(since: String) async throws -> Int? {
        // `limit=0` reads no rows: CouchDB and SyncNode nodes count the rest in `pending`.
        try await changes(since: since, limit: 0, documentIDs: nil).pending
    }

    func digestRoot() async throws -> String? {
        let (status, value) = try await send(.GET, "\(db)/_digest?buckets=false")
        // A peer without digests answers 400 or 404 (`_digest` read as a document ID).
        if [400, 404, 405].contains(status) { return nil }
        guard (200..<300).contains(status) else { throw Self.error(status, value) }
        guard let root = value["root"]?.stringValue else { throw Self.notJSON(.GET, "\(db)/_digest", status) }
        return root
    }

    func waitForChanges(since: String, timeout: Duration, documentIDs: [String]?) async throws {
        let ms = timeout.components.seconds * 1000
        let path = "\(db)/_changes?feed=longpoll&limit=1&since=\(WireURL.escape(since))&timeout=\(ms)"
        if let documentIDs {
            _ = try await expect(.POST, path + "&filter=_doc_ids", ["doc_ids": .array(documentIDs.map { .string($0) })])
        } else {
            _ = try await expect(.GET, path)
        }
    }

    func ensureFullCommit() async throws {
        // Optional in CouchDB 3, and peers without it answer anything from 404 to 500
        // (django-sofa routes it as a document ID): only a transport failure counts.
        do {
            _ = try await send(.POST, "\(db)/_ensure_full_commit", [:])
        } catch is CouchError {
            // Any answer will do, even one that is not JSON.
        }
    }

    func checkpoint(_ id: String) async throws -> ReplicationCheckpoint? {
        try await storedCheckpoint(id).map(ReplicationCheckpoint.init(json:))
    }

    func saveCheckpoint(_ id: String, _ checkpoint: ReplicationCheckpoint) async throws {
        var body = checkpoint.json
        if let current = try await storedCheckpoint(id), let rev = current["_rev"] { body["_rev"] = rev }
        _ = try await expect(.PUT, "\(db)/_local/\(WireURL.escape(id))", .dictionary(body))
    }

    /// The checkpoint document as stored, with its `_rev`.
    private func storedCheckpoint(_ id: String) async throws -> [String: DocumentValue]? {
        let (status, value) = try await send(.GET, "\(db)/_local/\(WireURL.escape(id))")
        if status == 404 { return nil }
        guard (200..<300).contains(status), case .dictionary(let d) = value else { throw Self.error(status, value) }
        return d
    }
}
