import Foundation
import SyncNodeStore

/// One side of a replication, as the algorithm sees it: the CouchDB
/// replication protocol's operations. ``HTTPRemote`` speaks it to any
/// CouchDB-compatible peer; ``LocalDatabase`` answers it from a local collection.
protocol ReplicationPeer: Sendable {
    /// A stable identity for checkpoints (the node or database UUID).
    func identity() async throws -> String
    /// Changes after `since` (an opaque sequence) that `filter` passes, at most `limit`, every
    /// leaf revision; `pending` is how many more the peer has, when it says. With a filter, a page
    /// may have no rows and still move `lastSeq` past the changes the filter skipped.
    func changes(since: String, limit: Int, filter: ChangeFilter) async throws -> PeerChanges
    /// Which of these revisions the peer lacks, with the revisions it has that may be their ancestors.
    func revsDiff(_ revs: [String: [String]]) async throws -> [String: MissingRevisions]
    /// The revisions with their history. Attachments come as files (a local peer), or as
    /// stubs (a remote one), which the receiver turns into content with
    /// ``receiving(_:wanted:from:)``.
    func fetch(_ wanted: [WantedRevisions]) async throws -> [WireRevision]
    /// `docs`, fetched from `source`, made ready for ``store(_:)`` on this side: a local
    /// collection takes in the content of their attachment stubs.
    func receiving(_ docs: [WireRevision], wanted: [WantedRevisions], from source: any ReplicationPeer) async throws -> [WireRevision]
    /// Stores revisions made elsewhere (`new_edits=false`); returns the
    /// documents the peer refused, with why (the others are stored).
    func store(_ docs: [WireRevision]) async throws -> StoredBatch
    /// How many changes the peer has after `since`; nil when it does not say.
    func pendingChanges(since: String) async throws -> Int?
    /// The root of the peer's `CollectionDigest`, and with `pendingSince` how many changes it
    /// has after that sequence when it says so in the same answer (a SyncNode node does); nil
    /// when it serves no digest (CouchDB, PouchDB).
    func digestRoot(pendingSince: String?) async throws -> (root: String, pending: Int?)?
    /// Returns once the peer has changes after `since`, or after `timeout`: with its answer's
    /// page (at most `limit` changes, every leaf revision; none when it timed out), so the next
    /// pass need not ask again; nil when the answer is not a page (a local peer's is never one).
    /// `liveSources` names the peers this node already pulls from live (``LivePulls``): a node
    /// may answer later for the changes it pulled from one of them.
    func waitForChanges(since: String, limit: Int, timeout: Duration, filter: ChangeFilter, liveSources: [String]) async throws -> PeerChanges?
    /// Makes what was stored durable before a checkpoint names it (`_ensure_full_commit`).
    func ensureFullCommit() async throws
    func checkpoint(_ id: String) async throws -> ReplicationCheckpoint?
    /// Saves a checkpoint; false when the peer no longer held the one this replication saved
    /// before (its database was deleted and made again, or reset): then it saves one that
    /// vouches for nothing, and the replication must read both sides' checkpoints again.
    func saveCheckpoint(_ id: String, _ checkpoint: ReplicationCheckpoint) async throws -> Bool
}

extension ReplicationPeer {
    /// A remote receiver takes the revisions as they are: a push streams their files to it.
    func receiving(_ docs: [WireRevision], wanted: [WantedRevisions], from source: any ReplicationPeer) async throws -> [WireRevision] {
        docs
    }
}

struct PeerChange: Sendable {
    let seq: String
    let id: String
    let revs: [String]
    /// The row's revision itself, with its history, when a node's long poll sent it
    /// (`revisions=true`): no `_bulk_get` needed for it.
    var revision: WireRevision? = nil
}

struct PeerChanges: Sendable {
    var rows: [PeerChange]
    var lastSeq: String
    var pending: Int?
    /// The source's digest root after these rows (a node's long poll, `digest=true`).
    var digestRoot: String?
}

struct StoredBatch: Sendable {
    /// Documents not stored, each with the peer's (or the store's) answer: `forbidden` (403) when a validator refused it.
    var refused: [(id: String, error: CouchError)] = []
    /// Documents that now have several leaves (known for local peers only):
    /// the only ones a conflict resolver needs to look at.
    var branched: Set<String> = []

    /// Adds what another request of the same batch stored.
    mutating func add(_ other: StoredBatch) {
        refused += other.refused
        branched.formUnion(other.branched)
    }
}

struct MissingRevisions: Sendable {
    var missing: [String]
    var possibleAncestors: [String]
}

struct WantedRevisions: Sendable {
    let id: String
    let revs: [String]
    let attsSince: [String]
}
