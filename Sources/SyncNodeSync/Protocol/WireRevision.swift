import SyncNodeStore

/// A revision as replication moves it between peers: the `_` members of its
/// wire document (`_id`, `_rev`, `_revisions`, `_deleted`, `_attachments`:
/// few and small) parsed, and its body kept as canonical JSON text. A pulled
/// body goes from the peer's answer to the store without a value tree, which
/// is most of what receiving a document used to cost.
struct WireRevision: Sendable {
    /// The wire document's members whose names start with `_`.
    let meta: [String: DocumentValue]
    /// The other members, canonical.
    let body: CanonicalBody

    /// Splits a wire document given as JSON text.
    /// - throws: ``StoreError/invalidJSON(_:)`` when it is not a JSON object.
    init(json: String) throws {
        (body, meta) = try CanonicalBody.parse(objectJSON: json)
    }

    /// Splits a wire document already parsed (request bodies, `open_revs` answers).
    init(object: [String: DocumentValue]) {
        var meta: [String: DocumentValue] = [:]
        var body: [String: DocumentValue] = [:]
        for (key, value) in object {
            if key.hasPrefix("_") { meta[key] = value } else { body[key] = value }
        }
        self.meta = meta
        self.body = CanonicalBody(object: body)
    }

    var id: String { meta["_id"].wireText }
    var rev: String { meta["_rev"].wireText }
    var deleted: Bool { meta["_deleted"] == .bool(true) }

    /// The wire document as JSON text (its `_` members first).
    var json: String { WireDocument.splice(meta: meta, body: body.text) }

    /// The `_` members interpreted; unknown ones are an error (CouchDB's doc_validation).
    func decoded() throws -> WireDocument.Incoming {
        try WireDocument.decode(meta)
    }

    /// The body as values, for filters and for resolving attachments.
    func bodyValues() throws -> [String: DocumentValue] {
        guard case .dictionary(let values) = try DocumentValue(json: body.text) else { return [:] }
        return values
    }
}
