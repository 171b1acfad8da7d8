import Foundation
import SyncNodeStore

/// One side of a replication, as the algorithm sees it: the CouchDB
/// replication protocol's operations. ``HTTPRemote`` speaks it to any
/// CouchDB-compatible peer; ``LocalDatabase`` answers it from a local collection.
protocol ReplicationPeer: Sendable {
    /// A stable identity for checkpoints (the node or database UUID).
    func identity() async throws -> String
    /// Changes after `since` (an opaque sequence), at most `limit`, every leaf revision.
    func changes(since: String, limit: Int, documentIDs: [String]?) async throws -> (rows: [PeerChange], lastSeq: String)
    /// Which of these revisions the peer lacks.
    func revsDiff(_ revs: [String: [String]]) async throws -> [String: [String]]
    /// The revisions with their history, as wire documents.
    func fetch(_ wanted: [(id: String, revs: [String])]) async throws -> [[String: DocumentValue]]
    /// Stores revisions made elsewhere (`new_edits=false`); returns the
    /// documents the peer refused, with why (the others are stored).
    func store(_ docs: [[String: DocumentValue]]) async throws -> [(id: String, reason: String)]
    /// Returns once the peer has changes after `since`, or after `timeout`.
    func waitForChanges(since: String, timeout: Duration, documentIDs: [String]?) async throws
    func checkpoint(_ id: String) async throws -> [String: DocumentValue]?
    func saveCheckpoint(_ id: String, _ body: [String: DocumentValue]) async throws
}

struct PeerChange: Sendable {
    let seq: String
    let id: String
    let revs: [String]
}
