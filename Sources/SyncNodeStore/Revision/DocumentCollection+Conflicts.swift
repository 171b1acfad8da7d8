import GRDB

/// Conflicts: finding them, reading their leaves, and closing losing branches so that a
/// document has one live leaf again (for apps, and for the replicator's resolver).
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
        if let key = mergedBody?.keys.first(where: { $0.hasPrefix("_") && $0 != Self.attachmentsKey }) {
            throw StoreError.reservedProperty(key)
        }
        try resolveConflict(id: id, winner: winner, merged: mergedBody.map(CanonicalBody.init(object:)), seen: seen)
    }

    /// ``resolveConflict(id:winner:mergedBody:seen:)`` with the merged body in canonical form.
    func resolveConflict(id: String, winner: String?, merged: CanonicalBody?, seen: Set<String>) throws {
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
            guard let winner, let merged, let kept = leaves.first(where: { $0.rev == winner }) else { return }
            let mergedRev = RevisionID.make(parent: winner, deleted: false, body: merged)
            try insertRevision(id: id, history: [mergedRev] + kept.history, deleted: false, body: merged)
        }
    }

    // MARK: - Public API

    /// The IDs of the documents in conflict, in ID order: those with more than one live leaf
    /// revision.
    ///
    /// A conflict arises when two nodes edit a document between replications and the
    /// replicator keeps both sides (`conflictResolver = nil`, or a resolver that gave up), or when
    /// a CouchDB or PouchDB client writes a conflicting revision. Every node shows the same
    /// winner meanwhile (``Document/revisionID`` is the winning leaf); resolve with
    /// ``resolveConflict(id:keeping:of:)`` or ``resolveConflict(id:merged:of:)``.
    ///
    /// This reads the revision tree of every document with more than one revision: a scan of
    /// the collection, meant for occasional checks, not for every change.
    /// - Throws: ``StoreError/collectionDeleted(_:)``, ``StoreError/databaseClosed(_:)``,
    ///   ``StoreError/storage(_:)``.
    public func conflictedDocumentIDs() throws -> [String] {
        try checkLive()
        return try database.read { db in
            // A tree of one revision has no newline; only longer histories can branch.
            let rows = try Row.fetchCursor(db, sql: "SELECT id, tree FROM \(tables.docs) WHERE instr(tree, char(10)) > 0 ORDER BY id")
            var ids: [String] = []
            while let row = try rows.next() {
                if try RevisionTree(serialized: row[1]).hasConflict { ids.append(row[0]) }
            }
            return ids
        }
    }

    /// Every leaf revision of the document, each as a ``Document`` with its
    /// ``Document/revisionID``: the winner first, then the other live leaves (the conflicts),
    /// then deleted leaves (``Document/isDeleted``, with no properties). Empty when the
    /// document does not exist (purged or never saved).
    /// - Throws: ``StoreError/collectionDeleted(_:)``, ``StoreError/databaseClosed(_:)``,
    ///   ``StoreError/storage(_:)``.
    public func leafDocuments(id: String) throws -> [Document] {
        try leafRevisions(id: id).map { leaf in
            Document(id: id, revisionID: leaf.rev, sequence: leaf.sequence, isDeleted: leaf.deleted,
                     json: leaf.deleted ? "{}" : leaf.body ?? "{}", blobStore: database.blobStore)
        }
    }

    /// Ends the document's conflict by keeping one live leaf: every other live leaf gets a
    /// tombstone. Returns the document as it now reads.
    ///
    /// The tombstones' revision IDs derive from their parents only, as the replicator's
    /// resolver writes them, so nodes that resolve the same conflict the same way write the
    /// same revisions and agree after they replicate. Keeping the only live leaf changes nothing.
    /// - Parameters:
    ///   - id: the document.
    ///   - revisionID: the live leaf to keep.
    ///   - leaves: the leaves the decision was made on, as ``leafDocuments(id:)`` returned them:
    ///     when the document's leaves are no longer these (a pull or a save since), nothing is
    ///     written and the call throws ``StoreError/conflict(documentID:)``. Nil: whatever the
    ///     leaves are when the call runs (a leaf that arrived since is closed too).
    /// - Throws: ``StoreError/notFound(_:_:)`` (``StoreError/Subject/document``) when the
    ///   document does not exist, (``StoreError/Subject/revision``) when `revisionID` is not a
    ///   live leaf of it; ``StoreError/conflict(documentID:)`` when the leaves are no longer
    ///   `leaves`; ``StoreError/rejected(documentID:reason:)`` when a validator that applies to
    ///   local saves refuses a tombstone; ``StoreError/collectionDeleted(_:)``,
    ///   ``StoreError/databaseClosed(_:)``, ``StoreError/storage(_:)``.
    @discardableResult
    public func resolveConflict(id: String, keeping revisionID: String, of leaves: [Document]? = nil) throws -> Document {
        try resolve(id: id, keeping: revisionID, merged: nil, seen: leaves)
    }

    /// Ends the document's conflict with a merged version: it becomes a child of the current
    /// winner, and every other live leaf gets a tombstone. `merged` learns its new revision.
    ///
    /// Build `merged` from the leaves, for instance the winner's ``Document/toMutable()`` with
    /// the other side's changes applied. Blobs in it are stored as a save stores them. Two
    /// nodes that merge the same conflict into the same properties write the same revisions
    /// (the merged revision's ID derives from the winner and the canonical body), so they agree
    /// after they replicate.
    /// - Parameters:
    ///   - id: the document.
    ///   - merged: its properties after the merge; its ``MutableDocument/id`` must be `id`. When it
    ///     came from a leaf (``Document/toMutable()``), that leaf must still be the winner.
    ///   - leaves: the leaves the merge was made of, as for ``resolveConflict(id:keeping:of:)``.
    /// - Throws: ``StoreError/notFound(_:_:)`` (``StoreError/Subject/document``) when the
    ///   document does not exist or is deleted; ``StoreError/invalidValue(_:)`` when `merged`
    ///   is another document; ``StoreError/reservedProperty(_:)`` for a top-level key starting
    ///   with `_`; ``StoreError/conflict(documentID:)`` when the winner `merged` was read from,
    ///   or the leaves, changed since; ``StoreError/rejected(documentID:reason:)`` when a
    ///   validator that applies to local saves refuses; ``StoreError/collectionDeleted(_:)``,
    ///   ``StoreError/databaseClosed(_:)``, ``StoreError/storage(_:)``.
    @discardableResult
    public func resolveConflict(id: String, merged: MutableDocument, of leaves: [Document]? = nil) throws -> Document {
        guard merged.id == id else {
            throw StoreError.invalidValue("the merged document is '\(merged.id)', not '\(id)'")
        }
        let result = try resolve(id: id, keeping: nil, merged: merged, seen: leaves)
        merged.revisionID = result.revisionID
        merged.sequence = result.sequence
        return result
    }

    /// Keeps `keeping` (nil: the winner) and closes the other live leaves, in one transaction;
    /// `seen` (nil: the current ones) are the leaves the decision was made on.
    private func resolve(id: String, keeping: String?, merged: MutableDocument?, seen: [Document]?) throws -> Document {
        try checkLive()
        var result: Document?
        try database.inBatch {
            let leaves = try leafRevisions(id: id)
            guard let winner = leaves.first, !winner.deleted else {
                throw StoreError.notFound(.document, "document '\(id)' in \(fullName)")
            }
            // A merge read from a leaf that is no longer the winner would overwrite what nobody read.
            if let read = merged?.revisionID, read != winner.rev { throw StoreError.conflict(documentID: id) }
            let kept = keeping ?? winner.rev
            guard leaves.contains(where: { $0.rev == kept && !$0.deleted }) else {
                throw StoreError.notFound(.revision, "revision \(kept) is not a live leaf of document '\(id)' in \(fullName)")
            }
            // The leaves the decision was made on: the resolver's own check refuses others.
            let decidedOn = seen.map { Set($0.compactMap(\.revisionID)) } ?? Set(leaves.map(\.rev))
            try resolveConflict(id: id, winner: kept, merged: try merged.map { try encodeBody($0) }, seen: decidedOn)
            result = try document(id: id)
        }
        guard let result else { throw StoreError.notFound(.document, "document '\(id)' in \(fullName)") }
        return result
    }
}
