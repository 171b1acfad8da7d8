import SyncNodeStore

/// A revision as replication moves it between peers: the `_` members of its
/// wire document (`_id`, `_rev`, `_revisions`, `_deleted`, `_attachments`:
/// few and small) parsed, and its body kept as canonical JSON text. A pulled
/// body goes from the peer's answer to the store without a value tree, which
/// is most of what receiving a document used to cost. A class: batches of
/// thousands are filtered and split, and a copy is then one reference, not
/// one for each of its members.
final class WireRevision: Sendable {
    /// The wire document's members whose names start with `_`.
    let meta: [String: DocumentValue]
    /// The other members, canonical.
    let body: CanonicalBody
    /// The content of the attachments marked `"follows": true` in `_attachments`, by name.
    let files: [String: AttachmentFile]
    /// `meta` interpreted once; its error (an unknown `_` member) is the document's, thrown when read.
    private let interpreted: Swift.Result<WireDocument.Incoming, any Error>
    /// `_id`, `_rev` and `_deleted` as text and flag, read once: a batch asks for them per document
    /// several times (parts, outcomes, reports).
    let id: String
    let rev: String
    let deleted: Bool

    init(meta: [String: DocumentValue], body: CanonicalBody, files: [String: AttachmentFile] = [:]) {
        self.meta = meta
        self.body = body
        self.files = files
        interpreted = Swift.Result { try WireDocument.decode(meta) }
        id = meta["_id"].wireText
        rev = meta["_rev"].wireText
        deleted = meta["_deleted"] == .bool(true)
    }

    /// Splits a wire document given as JSON text.
    /// - Throws: `StoreError.invalidJSON` when it is not a JSON object.
    convenience init(json: String) throws {
        // Most wire documents carry their revision: no hash until one is made.
        let (body, meta) = try CanonicalBody.parse(objectJSON: json, hashing: false)
        self.init(meta: meta, body: body)
    }

    /// Splits the wire document at `start` inside a larger text (a `_bulk_get` answer), read
    /// where it stands; also returns where it ends. `scratch` is a buffer kept between calls.
    /// - Throws: `StoreError.invalidJSON` when it is not a JSON object.
    static func read(in input: UnsafeBufferPointer<UInt8>, at start: Int, scratch: inout [UInt8]) throws(StoreError) -> (WireRevision, end: Int) {
        let (body, meta, end) = try CanonicalBody.parse(objectIn: input, at: start, hashing: false, scratch: &scratch)
        return (WireRevision(meta: meta, body: body), end)
    }

    /// Splits a wire document already parsed (request bodies, `open_revs` answers).
    convenience init(object: [String: DocumentValue], files: [String: AttachmentFile] = [:]) {
        var meta: [String: DocumentValue] = [:]
        var body: [String: DocumentValue] = [:]
        for (key, value) in object {
            if key.hasPrefix("_") { meta[key] = value } else { body[key] = value }
        }
        self.init(meta: meta, body: CanonicalBody(object: body), files: files)
    }

    /// A stored revision with its history, as a peer receives it. Without
    /// attachments its stored body is used as it is (it is canonical already);
    /// with them, those the receiver lacks follow as files (`attachments` is
    /// ``WireDocument/AttachmentContent/files(known:)``) or inline.
    convenience init(stored revision: StoredRevision, attachments: WireDocument.AttachmentContent, collection: DocumentCollection) throws {
        let body = revision.body ?? "{}"
        guard WireDocument.hasBlobs(body) else {
            self.init(
                meta: WireDocument.meta(id: revision.id, rev: revision.rev, deleted: revision.deleted, revisions: revision.history),
                body: CanonicalBody(storedJSON: body))
            return
        }
        var files: [String: AttachmentFile] = [:]
        let json = try WireDocument.encode(
            id: revision.id, rev: revision.rev, deleted: revision.deleted, body: body, revisions: revision.history,
            attachments: attachments, collection: collection, files: &files)
        let (canonical, meta) = try CanonicalBody.parse(objectJSON: json, hashing: false)
        self.init(meta: meta, body: canonical, files: files)
    }

    /// The same revision with other `_` members and files (attachments resolved on arrival).
    func replacing(meta: [String: DocumentValue], files: [String: AttachmentFile]) -> WireRevision {
        WireRevision(meta: meta, body: body, files: files)
    }

    /// The base64 attachment data it carries inline, in bytes of JSON.
    var inlineAttachmentBytes: Int {
        guard case .dictionary(let attachments)? = meta[DocumentCollection.attachmentsKey] else { return 0 }
        return attachments.values.reduce(0) { total, entry in
            guard case .string(let data)? = entry["data"] else { return total }
            return total + data.utf8.count
        }
    }

    /// Appends the wire document as JSON (its `_` members first).
    func write(to out: inout JSONWriter) {
        out.writeObject(meta)
        guard !meta.isEmpty else {
            out.bytes.removeLast(2)  // `{}`: the body alone
            out.bytes.append(contentsOf: body.bytes)
            return
        }
        guard body.bytes.count > 2 else { return }
        out.bytes[out.bytes.count - 1] = UInt8(ascii: ",")  // the body's own brace closes the object
        out.bytes.append(contentsOf: body.bytes.dropFirst())
    }

    /// The `_` members interpreted; unknown ones are an error (CouchDB's doc_validation).
    func decoded() throws -> WireDocument.Incoming {
        try interpreted.get()
    }

    /// The body as values, for filters and for resolving attachments.
    func bodyValues() throws -> [String: DocumentValue] {
        guard case .dictionary(let values) = try DocumentValue(json: body.text) else { return [:] }
        return values
    }
}
