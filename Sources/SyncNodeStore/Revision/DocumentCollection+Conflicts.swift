/// Conflict resolution for the replicator: closing losing branches so that a
/// document has one live leaf again.
extension DocumentCollection {
    /// A stored revision as a ``Document``; nil for a tombstone (the shape
    /// conflict resolvers see: a deleted side is absent).
    package func document(_ revision: StoredRevision) -> Document? {
        guard !revision.deleted, let body = revision.body else { return nil }
        return Document(id: revision.id, revisionID: revision.rev, sequence: revision.sequence, isDeleted: false,
                        json: body, blobStore: database.blobStore)
    }

    /// Ends a conflict in one transaction: every live leaf other than `winner`
    /// gets a tombstone child; with `mergedBody`, the winner gets a child
    /// holding it. A nil `winner` deletes the document (all live leaves closed).
    ///
    /// The new revision IDs derive from their parents and bodies only, so two
    /// nodes that resolve the same conflict the same way write the same
    /// revisions and stay in agreement when they replicate.
    package func resolveConflict(id: String, winner: String?, mergedBody: [String: DocumentValue]?) throws {
        try database.inBatch {
            let leaves = try leafRevisions(id: id)
            // The winner was chosen from an earlier read: if a local save has since extended
            // it, tombstoning "every other leaf" would delete the document. Let the caller retry.
            if let winner, !leaves.contains(where: { $0.rev == winner && !$0.deleted }) {
                throw StoreError.conflict(documentID: id)
            }
            for leaf in leaves where !leaf.deleted && leaf.rev != winner {
                let tombstone = RevisionID.make(parent: leaf.rev, deleted: true, body: .empty)
                try insertRevision(id: id, history: [tombstone] + leaf.history, deleted: true, body: [:])
            }
            guard let winner, let mergedBody, let kept = leaves.first(where: { $0.rev == winner }) else { return }
            let merged = RevisionID.make(parent: winner, deleted: false, body: CanonicalBody(object: mergedBody))
            try insertRevision(id: id, history: [merged] + kept.history, deleted: false, body: mergedBody)
        }
    }
}
