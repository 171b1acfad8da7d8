import Synchronization
import SyncNodeStore

/// The revisions a long poll's node pulled, while it waited, from the peers its asker pulls
/// from live (`live_sources`): a `revisions=true` answer leaves them out of their rows, so a
/// mesh write's body crosses to each node once and not once more from each of its peers.
final class RelayedRevisions: Sendable {
    private let revisions = Mutex<Set<String>>([])

    func add(_ documents: [ChangedDocument], pulledFrom sources: Set<String>) {
        let pulled = documents.compactMap { document -> String? in
            guard case .replication(let peer) = document.origin, sources.contains(peer), let rev = document.revisionID else { return nil }
            return document.id + "\u{0}" + rev
        }
        if !pulled.isEmpty { revisions.withLock { $0.formUnion(pulled) } }
    }

    func contains(id: String, rev: String) -> Bool {
        revisions.withLock { $0.contains(id + "\u{0}" + rev) }
    }
}
