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
    mutating func reached(_ sequence: String, saving: Bool = true) async throws {
        since = sequence
        guard saving else { return }
        checkpoint = checkpoint.recording(sequence)
        let (reached, target, id) = (checkpoint, target, id)
        try await replicator.withRetries { try await target.ensureFullCommit() }
        try await replicator.withRetries { try await target.saveCheckpoint(id, reached) }
        if !sourceIsReadOnly { sourceIsReadOnly = try await !saveOnSource(reached) }
        replicator.update { $0.lastCheckpoint = reached.sourceLastSequence }
    }

    /// Saves `checkpoint` on the source; false when the source refuses it (401/403).
    private func saveOnSource(_ checkpoint: ReplicationCheckpoint) async throws -> Bool {
        do {
            try await replicator.withRetries { try await source.saveCheckpoint(id, checkpoint) }
            return true
        } catch let refusal as CouchError where PeerStatus.refused.contains(refusal.status) {
            replicator.logger.info("the source refuses checkpoints; resuming from the target's alone", metadata: ["reason": "\(refusal.reason)"])
            return false
        }
    }
}
