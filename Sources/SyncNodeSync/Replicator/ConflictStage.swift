import Logging
import SyncNodeStore

/// After a pulled batch is stored, ends the conflicts it made: each document the batch branched
/// goes through the replicator's ``ConflictResolver``, the same way on every node.
struct ConflictStage: Sendable {
    let resolver: ConflictResolver
    let collection: DocumentCollection
    let logger: Logger

    /// `pulled`: the batch's revisions; `branched`: the IDs of documents that now have several leaves.
    /// - Throws: the store's errors, but a document that kept changing under the resolver.
    func resolve(pulled: [WireRevision], branched: Set<String>) throws {
        guard !branched.isEmpty else { return }
        var revisions: [String: Set<String>] = [:]
        for doc in pulled where branched.contains(doc.id) {
            revisions[doc.id, default: []].insert(doc.rev)
        }
        for (id, revs) in revisions {
            do {
                try resolver.resolveConflicts(of: id, pulled: revs, in: collection)
            } catch StoreError.conflict {
                // The document kept changing under the resolver: its revisions are stored, the
                // conflict stays for the app (`conflictingRevisions`); replication goes on.
                logger.warning("a conflict was left unresolved: the document kept changing", metadata: ["id": "\(id)"])
            }
        }
    }
}
