import SyncNodeStore

/// The one way a revision from outside this node enters a collection, whoever brings it: a
/// client's edit or delete through the listener, or a replicated revision, pushed to the
/// listener (`new_edits=false`) or pulled by the replicator.
///
/// It resolves `_attachments` against the revision the new one builds on (``AttachmentIntake``),
/// and it holds the rule for batches: a document the store refuses is reported and skipped
/// (``refusal(_:)``); any other failure rolls the whole batch back.
struct RevisionIntake {
    let collection: DocumentCollection
    /// Who writes, for the collection's validator.
    let author: WriteAuthor

    /// Stores a replicated revision as given: grafted into the tree with its history (`_revisions`),
    /// attachment stubs resolved against the nearest ancestor this side has.
    ///
    /// - Throws: `CouchError` 400 without `_id` and `_rev`, or with a history that does not start
    ///   at `_rev`; 412 for a stub no ancestor here holds; `StoreError` when the store refuses it.
    @discardableResult
    func graft(_ revision: WireRevision) throws -> RevisionInsertion {
        let incoming = try revision.decoded()
        guard let id = incoming.id, let rev = incoming.rev else {
            throw CouchError.badRequest("new_edits=false needs _id and _rev")
        }
        let history = incoming.history ?? [rev]
        guard history.first == rev else { throw CouchError.badRequest("_revisions does not start with _rev") }
        guard !incoming.attachments.isEmpty else {
            return try collection.insertRevision(id: id, history: history, deleted: incoming.deleted, body: revision.body, author: author)
        }
        var previousBody: String?
        for ancestor in history.dropFirst() {
            if let known = try collection.revision(id: id, rev: ancestor), let body = known.body {
                previousBody = body
                break
            }
        }
        if previousBody == nil { previousBody = try collection.revision(id: id)?.body }
        let body = try AttachmentIntake.resolve(
            incoming.attachments, body: revision.bodyValues(), previousBody: previousBody,
            generation: RevisionID.generation(of: rev) ?? 1, replicated: true, collection: collection, files: revision.files)
        return try collection.insertRevision(id: id, history: history, deleted: incoming.deleted, body: body, author: author)
    }

    /// Stores a client's edit (`new_edits=true`) of document `id`: a child of its `_rev`, which
    /// must be a leaf (none for a new document). `_deleted` makes it a tombstone.
    ///
    /// - Returns: the new revision's ID.
    /// - Throws: `StoreError.conflict` when `_rev` is not a leaf; `CouchError` for a malformed
    ///   attachment; `StoreError` when the store refuses it.
    func edit(_ revision: WireRevision, id: String) throws -> String {
        let incoming = try revision.decoded()
        var body = revision.body
        if incoming.deleted {
            body = CanonicalBody(object: [:])
        } else if !incoming.attachments.isEmpty {
            let previous = try incoming.rev.flatMap { try collection.revision(id: id, rev: $0) }
            body = CanonicalBody(object: try AttachmentIntake.resolve(
                incoming.attachments, body: revision.bodyValues(), previousBody: previous?.body,
                generation: WireDocument.childGeneration(of: incoming.rev), replicated: false, collection: collection,
                files: revision.files))
        }
        return try collection.putRevision(id: id, parentRev: incoming.rev, body: body, deleting: incoming.deleted, author: author).rev
    }

    /// Stores a tombstone on revision `rev` of document `id`, and returns its revision ID.
    func delete(id: String, rev: String) throws -> String {
        try collection.putRevision(id: id, parentRev: rev, body: CanonicalBody(object: [:]), deleting: true, author: author).rev
    }

    /// Stores a child of revision `rev` of document `id` (a new document when nil) whose
    /// `_attachments` `change` edits, and returns its revision ID.
    ///
    /// - Throws: `CouchError.conflict` when this side lacks `rev`; what `change` throws.
    func editAttachments(id: String, rev: String?, _ change: (inout [String: DocumentValue]) throws -> Void) throws -> String {
        var values: [String: DocumentValue] = [:]
        if let rev {
            guard let revision = try collection.revision(id: id, rev: rev), let body = revision.body else { throw CouchError.conflict() }
            if case .dictionary(let d) = try DocumentValue(json: body) { values = d }
        }
        var attachments: [String: DocumentValue] = [:]
        if case .dictionary(let a)? = values[DocumentCollection.attachmentsKey] { attachments = a }
        try change(&attachments)
        values[DocumentCollection.attachmentsKey] = attachments.isEmpty ? nil : .dictionary(attachments)
        return try collection.putRevision(id: id, parentRev: rev, body: CanonicalBody(object: values), deleting: false, author: author).rev
    }

    /// Runs `body` as one transaction: a batch of documents commits whole or not at all.
    func inBatch(_ body: () throws -> Void) throws {
        try collection.database.inBatch(body)
    }

    /// What one document of a batch answers when storing it failed with `error`: the refusal
    /// (a validator, a conflict, a malformed revision, a missing stub), reported while the others
    /// go on. Nil for a failure of the store itself (storage, I/O), which must roll the whole batch
    /// back: a half-written document must not commit, and replication must not skip it.
    static func refusal(_ error: any Error) -> CouchError? {
        switch error {
        case let error as StoreError where error.isDocumentLevel: CouchError(error)
        case let error as CouchError where error.status < 500: error
        default: nil
        }
    }
}
