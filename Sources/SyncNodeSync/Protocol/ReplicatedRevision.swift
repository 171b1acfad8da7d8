import SyncNodeStore

/// Stores a revision that arrived from a replicator (`new_edits=false`):
/// grafted into the tree with its history, attachments resolved against the
/// nearest ancestor this side has.
enum ReplicatedRevision {
    @discardableResult
    static func insert(_ revision: WireRevision, into collection: DocumentCollection, author: WriteAuthor) throws -> RevisionInsertion {
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
        let body = try AttachmentStore.resolve(
            incoming.attachments, body: revision.bodyValues(), previousBody: previousBody,
            generation: RevisionID.generation(of: rev) ?? 1, replicated: true, collection: collection, files: revision.files)
        return try collection.insertRevision(id: id, history: history, deleted: incoming.deleted, body: body, author: author)
    }
}
