import Foundation

/// Where one direction of a replication starts and how far it got: the checkpoint `id`, kept on
/// both sides as CouchDB's replicator keeps it.
///
/// It starts from the last sequence both sides agree on. A source that lets the replicator read
/// but not write (a reader in its `_security`) keeps no checkpoint: the target's alone says where
/// to resume, as PouchDB does with read-only sources.
struct Checkpointer: Sendable {
    let replicator: Replicator
    let source: any ReplicationPeer
    let target: any ReplicationPeer
    let id: String
    private var checkpoint: ReplicationCheckpoint
    private var sourceIsReadOnly = false

    /// The source sequence to resume after.
    private(set) var since: String
    /// The rows examined since the last checkpoint saved: the next read of the checkpoints
    /// examines them again.
    private(set) var unsavedRows = 0

    /// Reads both sides' checkpoints (none with `reset`) and finds where to resume. `origin`
    /// goes into each checkpoint written.
    init(replicator: Replicator, source: any ReplicationPeer, target: any ReplicationPeer, id: String,
         origin: ReplicationCheckpoint.Origin, reset: Bool) async throws {
        self.replicator = replicator
        self.source = source
        self.target = target
        self.id = id
        let sourceCheckpoint = reset ? nil : try await replicator.withRetries { try await source.checkpoint(id) }
        let targetCheckpoint = reset ? nil : try await replicator.withRetries { try await target.checkpoint(id) }
        since = ReplicationCheckpoint.agreedSequence(source: sourceCheckpoint, target: targetCheckpoint)
        checkpoint = ReplicationCheckpoint(session: UUID().uuidString.lowercased(), sourceLastSequence: since,
                                           history: sourceCheckpoint?.history ?? [], origin: origin)
        if sourceCheckpoint == nil, let targetCheckpoint {
            // A checkpoint at the start, agreeing with nothing: if the source takes it, this run starts over.
            sourceIsReadOnly = try await !saveOnSource(ReplicationCheckpoint(session: checkpoint.session, sourceLastSequence: "0", origin: origin))
            if sourceIsReadOnly { since = targetCheckpoint.sourceLastSequence }
        }
    }

    /// Records that everything up to `sequence` is on the target: committed there, then saved,
    /// target first, so a crash re-examines at most one batch. Without `saving`, only this run
    /// knows it (the next one starts from the last checkpoint saved, and examines again what
    /// came after it).
    mutating func reached(_ sequence: String, saving: Bool = true, rows: Int = 0) async throws {
        since = sequence
        guard saving else {
            unsavedRows += rows
            return
        }
        unsavedRows = 0
        checkpoint = checkpoint.recording(sequence)
        let (reached, target, id) = (checkpoint, target, id)
        try await replicator.withRetries { try await target.ensureFullCommit() }
        let kept = try await replicator.withRetries { try await target.saveCheckpoint(id, reached) }
        try Self.check(kept, side: "target")
        if !sourceIsReadOnly { sourceIsReadOnly = try await !saveOnSource(reached) }
        replicator.update { $0.lastCheckpoint = reached.sourceLastSequence }
    }

    /// A side lost the checkpoint this replication saved there (see
    /// ``ReplicationPeer/saveCheckpoint(_:_:)``): the pass ends, and the next one reads both
    /// sides' checkpoints again and starts over (a checkpointer carried from pass to pass had
    /// not read them since).
    private static func check(_ kept: Bool, side: String) throws {
        guard kept else {
            throw SyncError.connectionFailed("the \(side) no longer holds this replication's checkpoint (its database was deleted or reset); starting over")
        }
    }

    /// Saves `checkpoint` on the source; false when the source refuses it (401/403).
    private func saveOnSource(_ checkpoint: ReplicationCheckpoint) async throws -> Bool {
        do {
            let kept = try await replicator.withRetries { try await source.saveCheckpoint(id, checkpoint) }
            try Self.check(kept, side: "source")
            return true
        } catch let refusal as CouchError where PeerStatus.refused.contains(refusal.status) {
            replicator.logger.info("the source refuses checkpoints; resuming from the target's alone", metadata: ["reason": "\(refusal.reason)"])
            return false
        }
    }
}
