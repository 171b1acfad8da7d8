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
        /// Inline base64 data, except for attachments unchanged since
        /// generation `since` (CouchDB's `atts_since`), which stay stubs.
        case data(since: Int?)
    }

    /// The wire JSON of a stored revision.
    static func encode(
        id: String, rev: String, deleted: Bool, body: String?,
        revisions: [String]? = nil, conflicts: [String]? = nil,
        attachments: AttachmentContent = .stubs, blobs: (String) -> Data?
    ) throws -> String {
        var meta: [String: DocumentValue] = ["_id": .string(id), "_rev": .string(rev)]
        if deleted { meta["_deleted"] = true }
        if let revisions, let first = revisions.first, let start = generation(first) {
            meta["_revisions"] = ["start": .int(Int64(start)), "ids": .array(revisions.map { .string(suffix($0)) })]
        }
        if let conflicts, !conflicts.isEmpty { meta["_conflicts"] = .array(conflicts.map { .string($0) }) }
        let body = body ?? "{}"
        guard body.contains(#""@type":"blob""#) || body.contains(#""_attachments""#) else {
            return splice(meta: meta, body: body)
        }
        guard case .dictionary(var values) = try DocumentValue(json: body) else { return splice(meta: meta, body: body) }
        var wireAttachments: [String: DocumentValue] = [:]
        let generation = generation(rev) ?? 1
        func entry(_ blob: Blob) -> DocumentValue {
            var e: [String: DocumentValue] = [
                "content_type": .string(blob.contentType), "digest": .string(blob.digest),
                "length": .int(Int64(blob.length)), "revpos": .int(Int64(generation)),
            ]
            if case .data(let since) = attachments, since.map({ generation > $0 }) ?? true, let data = blobs(blob.digest) {
                e["data"] = .string(data.base64EncodedString())
            } else {
                e["stub"] = true
            }
            return .dictionary(e)
        }
        if case .dictionary(let named)? = values.removeValue(forKey: DocumentCollection.attachmentsKey) {
            for (name, value) in named {
                if let blob = blobValue(value) { wireAttachments[name] = entry(blob) }
            }
        }
        forEachBlob(in: .dictionary(values), path: "") { path, blob in wireAttachments["blob_" + path] = entry(blob) }
        if !wireAttachments.isEmpty { meta["_attachments"] = .dictionary(wireAttachments) }
        return splice(meta: meta, body: DocumentValue.dictionary(values).toJSON())
    }

    /// `{meta..., body...}` without re-serializing the body.
    private static func splice(meta: [String: DocumentValue], body: String) -> String {
        let head = DocumentValue.dictionary(meta).toJSON()
        let inner = body.dropFirst().dropLast()
        if inner.allSatisfy(\.isWhitespace) { return head }
        return head.dropLast() + "," + inner + "}"
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

    static func generation(_ rev: String) -> Int? {
        guard let dash = rev.firstIndex(of: "-") else { return nil }
        return Int(rev[..<dash])
    }

    static func suffix(_ rev: String) -> String {
        guard let dash = rev.firstIndex(of: "-") else { return rev }
        return String(rev[rev.index(after: dash)...])
    }

    /// A document received from a client or peer.
    struct Incoming {
        var id: String?
        var rev: String?
        var deleted: Bool
        /// From `_revisions`, newest first; nil when absent.
        var history: [String]?
        /// The raw `_attachments` object.
        var attachments: [String: DocumentValue]
        /// The body without `_` members.
        var body: [String: DocumentValue]
    }

    /// Splits a wire document into its parts; unknown `_` members are an error (CouchDB's doc_validation).
    static func decode(_ object: [String: DocumentValue]) throws -> Incoming {
        var incoming = Incoming(id: nil, rev: nil, deleted: false, history: nil, attachments: [:], body: [:])
        for (key, value) in object {
            guard key.hasPrefix("_") else {
                incoming.body[key] = value
                continue
            }
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
                guard case .dictionary(let r) = value, case .int(let start)? = r["start"], case .array(let ids)? = r["ids"] else {
                    throw CouchError.badRequest("_revisions must be {\"start\": N, \"ids\": [...]}")
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
