import Foundation
import SyncNodeStore

/// Documents as the CouchDB protocol carries them: the body plus `_id`,
/// `_rev`, `_deleted`, `_revisions`, `_conflicts` and `_attachments`.
///
/// Blobs map to attachments: a blob in a property travels as attachment
/// `blob_/<path>` (the property keeps its metadata dictionary); attachments
/// that arrive under other names (from CouchDB or PouchDB) are kept in the
/// body's `_attachments`, each as a blob metadata dictionary.
enum WireDocument {
    /// How `_attachments` entries are written.
    enum AttachmentContent {
        /// Stubs only (`"stub": true`).
        case stubs
        /// Inline base64 data, except for the attachments the receiver
        /// already has (digest -> the generation it has them at), which stay stubs.
        case data(known: [String: Int])

        /// Like `data`, but the content follows as files (``AttachmentFile``),
        /// each entry marked `"follows": true`: what replication sends.
        case files(known: [String: Int])

        /// All attachments inline.
        static let allData = AttachmentContent.data(known: [:])

        /// The same attachments, their content as files instead of inline.
        var asFiles: AttachmentContent {
            if case .data(let known) = self { return .files(known: known) }
            return self
        }
    }

    /// The wire JSON of a stored revision.
    static func encode(
        id: String, rev: String, deleted: Bool, body: String?,
        revisions: [String]? = nil, conflicts: [String]? = nil,
        attachments: AttachmentContent = .stubs, collection: DocumentCollection
    ) throws -> String {
        var files: [String: AttachmentFile] = [:]
        return try encode(
            id: id, rev: rev, deleted: deleted, body: body, revisions: revisions, conflicts: conflicts,
            attachments: attachments, collection: collection, files: &files)
    }

    /// The wire JSON of a stored revision; with ``AttachmentContent/files(known:)``, the
    /// attachments marked `follows` are added to `files`.
    static func encode(
        id: String, rev: String, deleted: Bool, body: String?,
        revisions: [String]? = nil, conflicts: [String]? = nil,
        attachments: AttachmentContent, collection: DocumentCollection, files: inout [String: AttachmentFile]
    ) throws -> String {
        let body = body ?? "{}"
        // The common case, spliced as text: no history, no conflicts, no blobs.
        if revisions == nil, conflicts?.isEmpty ?? true, !hasBlobs(body) {
            var head = "{\"_id\":" + DocumentValue.string(id).toJSON() + ",\"_rev\":" + DocumentValue.string(rev).toJSON()
            if deleted { head += ",\"_deleted\":true" }
            return splice(head: head, body: body)
        }
        var meta = meta(id: id, rev: rev, deleted: deleted, revisions: revisions, conflicts: conflicts)
        guard hasBlobs(body) else {
            return splice(meta: meta, body: body)
        }
        guard case .dictionary(var values) = try DocumentValue(json: body) else { return splice(meta: meta, body: body) }
        var wireAttachments: [String: DocumentValue] = [:]
        let generation = RevisionID.generation(of: rev) ?? 1
        var following: [String: AttachmentFile] = [:]
        func entry(_ name: String, _ blob: Blob) -> DocumentValue {
            // Peers exchange MD5 digests (the store's own key is a SHA-1); without the content here, the store's key is all there is.
            var e: [String: DocumentValue] = [
                "content_type": .string(blob.contentType), "digest": .string(collection.blobMD5(digest: blob.digest) ?? blob.digest),
                "length": .int(Int64(blob.length)), "revpos": .int(Int64(blob.revpos ?? generation)),
            ]
            switch attachments {
            case .data(let known) where known[blob.digest] == nil:
                if let data = collection.blobContent(digest: blob.digest) {
                    e["data"] = .string(data.base64EncodedString())
                    return .dictionary(e)
                }
            case .files(let known) where known[blob.digest] == nil:
                if let file = AttachmentFile(digest: blob.digest, contentType: blob.contentType, in: collection) {
                    e["follows"] = true
                    e["digest"] = .string(file.md5)
                    following[name] = file
                    return .dictionary(e)
                }
            case .data(let known), .files(let known):
                if blob.revpos == nil, let revpos = known[blob.digest] { e["revpos"] = .int(Int64(revpos)) }
            case .stubs:
                break
            }
            e["stub"] = true
            return .dictionary(e)
        }
        if case .dictionary(let named)? = values.removeValue(forKey: DocumentCollection.attachmentsKey) {
            for (name, value) in named {
                if let blob = blobValue(value) { wireAttachments[name] = entry(name, blob) }
            }
        }
        forEachBlob(in: .dictionary(values), path: "") { path, blob in wireAttachments["blob_" + path] = entry("blob_" + path, blob) }
        files.merge(following) { $1 }
        if !wireAttachments.isEmpty { meta["_attachments"] = .dictionary(wireAttachments) }
        return splice(meta: meta, body: DocumentValue.dictionary(values).toJSON())
    }

    /// The `_` members of a revision's wire document, but for `_attachments`.
    static func meta(id: String, rev: String, deleted: Bool, revisions: [String]?, conflicts: [String]? = nil) -> [String: DocumentValue] {
        var meta: [String: DocumentValue] = ["_id": .string(id), "_rev": .string(rev)]
        if deleted { meta["_deleted"] = true }
        if let revisions, let first = revisions.first, let start = RevisionID.generation(of: first) {
            meta["_revisions"] = ["start": .int(Int64(start)), "ids": .array(revisions.map { .string(suffix($0)) })]
        }
        if let conflicts, !conflicts.isEmpty { meta["_conflicts"] = .array(conflicts.map { .string($0) }) }
        return meta
    }

    /// Appends the wire JSON of a revision without conflicts or attachments,
    /// with its history as `_revisions` when given; false (nothing written)
    /// when it has attachments. The replication hot path (`_bulk_get`,
    /// `_changes` with docs): the body goes from the row to the answer in one copy.
    static func appendSimple(id: String, rev: String, deleted: Bool, body: String?, revisions: [String]? = nil, to out: inout JSONWriter) -> Bool {
        let body = body ?? "{}"
        guard !hasBlobs(body) else { return false }
        appendSimpleHead(id: id, rev: rev, deleted: deleted, revisions: revisions, to: &out)
        if body.utf8.count > 2 {
            out.writeRaw(",")
            var body = body
            // Through `withUTF8`: appending `utf8.dropFirst()` copies byte by byte.
            body.withUTF8 { out.bytes.append(contentsOf: UnsafeBufferPointer(rebasing: $0.dropFirst())) }
        } else {
            out.writeRaw("}")
        }
        return true
    }

    /// What ``appendSimple(id:rev:deleted:body:revisions:to:)`` writes before the body: the
    /// object's opening and its `_` members, unclosed. The body follows without its `{`, after
    /// a comma (or a lone `}` for an empty body).
    static func appendSimpleHead(id: String, rev: String, deleted: Bool, revisions: [String]?, to out: inout JSONWriter) {
        out.writeRaw(#"{"_id":"#)
        out.writeString(id)
        out.writeRaw(#","_rev":"#)
        out.writeString(rev)
        if deleted { out.writeRaw(#","_deleted":true"#) }
        if let revisions, let first = revisions.first, let start = RevisionID.generation(of: first) {
            out.writeRaw(#","_revisions":{"ids":["#)
            for (index, revision) in revisions.enumerated() {
                if index > 0 { out.writeRaw(",") }
                out.writeString(suffix(revision))
            }
            out.writeRaw("],\"start\":\(start)}")
        }
    }

    /// `{meta..., body...}` without re-serializing the body.
    private static func splice(meta: [String: DocumentValue], body: String) -> String {
        splice(head: String(DocumentValue.dictionary(meta).toJSON().dropLast()), body: body)
    }

    /// `head` is an object's opening without its closing brace; `body` a canonical object.
    private static func splice(head: String, body: String) -> String {
        guard body.utf8.count > 2 else { return head + "}" }
        var out = head
        out.reserveCapacity(head.utf8.count + body.utf8.count + 1)
        out += ","
        out += body.dropFirst()  // the body's own closing brace ends the object
        return out
    }


    private static func blobValue(_ value: DocumentValue) -> Blob? {
        if case .blob(let b) = value { return b }
        return nil
    }

    static func forEachBlob(in value: DocumentValue, path: String, _ body: (String, Blob) -> Void) {
        switch value {
        case .blob(let b): body(path, b)
        case .dictionary(let d): for (k, v) in d { forEachBlob(in: v, path: path + "/" + k, body) }
        case .array(let a): for (i, v) in a.enumerated() { forEachBlob(in: v, path: path + "/\(i)", body) }
        default: break
        }
    }

    /// How to write the attachments of `revision` for a receiver that has the
    /// revisions `attsSince` (CouchDB's `atts_since`): blobs present in one of
    /// those that is an ancestor stay stubs. Content-addressed digests make
    /// this exact, with no per-attachment `revpos` bookkeeping.
    static func attachments(
        of revision: StoredRevision, attsSince: [String], collection: DocumentCollection
    ) throws -> AttachmentContent {
        guard !attsSince.isEmpty, let own = revision.body, hasBlobs(own) else { return .allData }
        var known: [String: Int] = [:]
        for rev in attsSince where rev != revision.rev && revision.history.contains(rev) {
            guard let body = try collection.revision(id: revision.id, rev: rev)?.body, hasBlobs(body),
                  let generation = RevisionID.generation(of: rev) else { continue }
            forEachBlob(in: try DocumentValue(json: body), path: "") { _, blob in
                known[blob.digest] = min(known[blob.digest] ?? .max, generation)
            }
        }
        return .data(known: known)
    }

    /// Bytes of attachment content that inlining `body`'s attachments (``AttachmentContent/allData``)
    /// puts in its wire JSON, counted before base64: what sending it costs beyond the body.
    static func inlineBytes(of body: String) throws -> Int {
        guard hasBlobs(body) else { return 0 }
        var total = 0
        forEachBlob(in: try DocumentValue(json: body), path: "") { _, blob in total += blob.length }
        return total
    }

    static func hasBlobs(_ body: String) -> Bool {
        StringScan.contains(body, "\"@type\":\"blob\"") || StringScan.contains(body, "\"_attachments\"")
    }

    /// The generation of a new child of `parent` (1 for a first revision).
    static func childGeneration(of parent: String?) -> Int {
        (parent.flatMap(RevisionID.generation(of:)) ?? 0) + 1
    }

    static func suffix(_ rev: String) -> String {
        guard let dash = rev.firstIndex(of: "-") else { return rev }
        return String(rev[rev.index(after: dash)...])
    }

    /// What the `_` members of a document received from a client or peer say.
    struct Incoming: Sendable {
        var id: String?
        var rev: String?
        var deleted: Bool
        /// From `_revisions`, newest first; nil when absent.
        var history: [String]?
        /// The raw `_attachments` object.
        var attachments: [String: DocumentValue]
    }

    /// Reads a wire document's `_` members (others are ignored); unknown ones
    /// are an error (CouchDB's doc_validation).
    static func decode(_ object: [String: DocumentValue]) throws -> Incoming {
        var incoming = Incoming(id: nil, rev: nil, deleted: false, history: nil, attachments: [:])
        for (key, value) in object {
            guard key.hasPrefix("_") else { continue }
            switch key {
            case "_id":
                guard case .string(let s) = value else { throw CouchError.badRequest("_id must be a string") }
                incoming.id = s
            case "_rev":
                guard case .string(let s) = value else { throw CouchError.badRequest("_rev must be a string") }
                incoming.rev = s
            case "_deleted":
                if case .bool(let b) = value { incoming.deleted = b }
            case "_revisions":
                guard case .dictionary(let r) = value, case .int(let start)? = r["start"], case .array(let ids)? = r["ids"],
                      !ids.isEmpty, start >= Int64(ids.count), start < 1_000_000_000 else {
                    throw CouchError.badRequest("_revisions must be {\"start\": N, \"ids\": [...]} with 1 <= N - len(ids) + 1")
                }
                incoming.history = try ids.enumerated().map { i, id in
                    guard case .string(let s) = id else { throw CouchError.badRequest("_revisions ids must be strings") }
                    return "\(start - Int64(i))-\(s)"
                }
            case "_attachments":
                guard case .dictionary(let a) = value else { throw CouchError.badRequest("_attachments must be an object") }
                incoming.attachments = a
            case "_conflicts", "_deleted_conflicts", "_revs_info", "_local_seq":
                continue  // read-only metadata echoed back by some clients
            default:
                throw CouchError(status: 400, error: "doc_validation", reason: "Bad special document member: \(key)")
            }
        }
        return incoming
    }
}

extension Optional where Wrapped == DocumentValue {
    /// A wire member as text: strings as they are, integers (sequences) as
    /// digits, anything else as JSON; empty when absent.
    var wireText: String {
        switch self {
        case .string(let s)?: return s
        case .int(let i)?: return String(i)
        case let v?: return v.toJSON()
        case nil: return ""
        }
    }
}
