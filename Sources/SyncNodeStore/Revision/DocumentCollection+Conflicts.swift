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
    /// `seen` are the leaves (live and deleted) the decision was made on.
    ///
    /// The new revision IDs derive from their parents and bodies only, so two
    /// nodes that resolve the same conflict the same way write the same
    /// revisions and stay in agreement when they replicate.
    ///
    /// - Throws: ``StoreError/conflict(documentID:)`` when the leaves are no longer
    ///   `seen` (a save or another pull since): read them again and decide again.
    package func resolveConflict(id: String, winner: String?, mergedBody: [String: DocumentValue]?, seen: Set<String>) throws {
        try database.inBatch {
            let leaves = try leafRevisions(id: id)
            // The decision was made on an earlier read: if a save has since extended the winner,
            // or a new branch arrived, tombstoning "every other leaf" would delete what nobody looked at.
            guard Set(leaves.map(\.rev)) == seen, winner.map({ w in leaves.contains { $0.rev == w && !$0.deleted } }) ?? true else {
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
