import Foundation
import SyncNodeStore

/// A local collection as one side of a replication.
struct LocalDatabase: ReplicationPeer {
    let collection: DocumentCollection
    /// Who writes what this side receives, for the collection's validator.
    var author = WriteAuthor.local

    func identity() async throws -> String { "\(collection.database.uuid)/\(collection.fullName)" }

    func changes(since: String, limit: Int, filter: ChangeFilter) async throws -> PeerChanges {
        let start = Int64(since) ?? 0
        if case .selector(let selector) = filter {
            // SQLite tests the selector as it reads the sequence index: one read, however much it skips.
            let found = try collection.changes(since: start, limit: limit, allLeaves: true, matching: selector)
            let rows = found.entries.map { PeerChange(seq: String($0.sequence), id: $0.id, revs: $0.leafRevs) }
            return PeerChanges(rows: rows, lastSeq: String(found.through), pending: rows.count < limit ? 0 : nil)
        }
        var seq = start
        var rows: [PeerChange] = []
        var wanted: Set<String>?
        if case .documentIDs(let ids) = filter { wanted = Set(ids) }
        // Page until `limit` rows pass the filter or the feed ends.
        var more = false
        while rows.count < limit {
            let page = try collection.changes(since: seq, limit: limit, allLeaves: true)
            guard let last = page.last else { break }
            seq = last.sequence
            for entry in page where wanted?.contains(entry.id) ?? true {
                rows.append(PeerChange(seq: String(entry.sequence), id: entry.id, revs: entry.leafRevs))
            }
            more = page.count == limit
            if !more { break }
        }
        let pending = more && wanted == nil ? try collection.changeCount(since: seq) : nil
        return PeerChanges(rows: rows, lastSeq: String(seq), pending: more ? pending : 0)
    }

    func pendingChanges(since: String) async throws -> Int? {
        try collection.changeCount(since: Int64(since) ?? 0)
    }

    func digestRoot(pendingSince: String?) async throws -> (root: String, pending: Int?)? {
        (try collection.digest().root, try pendingSince.map { try collection.changeCount(since: Int64($0) ?? 0) })
    }

    func revsDiff(_ revs: [String: [String]]) async throws -> [String: MissingRevisions] {
        try collection.revsDiff(revs).mapValues { MissingRevisions(missing: $0.missing, possibleAncestors: $0.possibleAncestors) }
    }

    func fetch(_ wanted: [WantedRevisions]) async throws -> [WireRevision] {
        var out: [WireRevision] = []
        // One read transaction for the batch, not one per revision.
        try collection.inSnapshot {
            for want in wanted {
                for rev in want.revs {
                    guard let revision = try collection.revision(id: want.id, rev: rev), revision.body != nil else { continue }
                    // Attachments follow as files: a push streams them, a local target copies them.
                    let attachments = try WireDocument.attachments(of: revision, attsSince: want.attsSince, collection: collection).asFiles
                    out.append(try WireRevision(stored: revision, attachments: attachments, collection: collection))
                }
            }
        }
        return out
    }

    func receiving(_ docs: [WireRevision], wanted: [WantedRevisions], from source: any ReplicationPeer) async throws -> [WireRevision] {
        guard let source = source as? any AttachmentSource else { return docs }
        return try await AttachmentIntake.pulled(docs, wanted: wanted, into: collection, from: source)
    }

    func store(_ docs: [WireRevision]) async throws -> StoredBatch {
        var outcome = StoredBatch()
        let intake = RevisionIntake(collection: collection, author: author)
        try intake.inBatch {
            for doc in docs {
                // A document this store cannot hold (a `_design/` ID, a malformed revision) is
                // reported and skipped; it must not roll back the batch and stall replication.
                do {
                    if try intake.graft(doc) == .branched { outcome.branched.insert(doc.id) }
                } catch {
                    guard let refusal = RevisionIntake.refusal(error) else { throw error }
                    outcome.refused.append((doc.id, refusal))
                }
            }
        }
        return outcome
    }

    func waitForChanges(since: String, limit: Int, timeout: Duration, filter: ChangeFilter, liveSources: [String]) async throws -> PeerChanges? {
        let signal = ChangeSignal()
        let token = collection.addChangeListener { _ in signal.fire() }
        defer { token.remove() }
        if try collection.changeCount(since: Int64(since) ?? 0) > 0 { return nil }
        _ = await signal.wait(timeout: timeout)
        return nil
    }

    /// Nothing to do: a commit survives this process's crash as it returns. (SQLite's WAL is
    /// synced at its checkpoints, not at each commit, so a power cut can take the last commits,
    /// this checkpoint with them, and the next run, whose checkpoints then disagree, sends them
    /// again.)
    func ensureFullCommit() async throws {}

    func checkpoint(_ id: String) async throws -> ReplicationCheckpoint? {
        guard let doc = try collection.localDocument(id: id), case .dictionary(let d) = try DocumentValue(json: doc.body) else { return nil }
        return ReplicationCheckpoint(json: d)
    }

    func saveCheckpoint(_ id: String, _ checkpoint: ReplicationCheckpoint) async throws -> Bool {
        _ = try collection.putLocalDocument(id: id, json: DocumentValue.dictionary(checkpoint.json).toJSON(), rev: nil, force: true)
        return true
    }
}
