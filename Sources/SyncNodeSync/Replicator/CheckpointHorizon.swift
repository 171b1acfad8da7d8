import Foundation
import SyncNodeStore

/// How far a node's trusted peers have read each collection, told by replication checkpoints:
/// the horizon behind `serve --tombstone-ttl`.
///
/// A peer has read this node's changes up to a sequence when
/// - it pulled them: its replicator wrote a checkpoint here (`PUT _local/...`, signed in by its
///   certificate), or
/// - this node pushed them: our replicator's own checkpoint for that peer says so.
///
/// Only checkpoints of the same keyspace on both sides count (the mesh replicates `shop` with
/// `shop`): a peer's copy of this keyspace into another database says nothing of its own.
/// Of each kind, the checkpoint written last counts, never the highest: a peer that lost its
/// database starts a new one from 0. Checkpoints of filtered replications (a selector, document
/// IDs) do not count, since the changes they skipped never reached the peer. Every trusted,
/// unrevoked peer whose scope covers the keyspace is waited for, whether or not it has ever
/// replicated it; a peer that never will should be given a narrower scope, or untrusted.
///
/// Peers known only by a URL (`--sync-with`, `_replicate`, CouchDB, PouchDB) are not waited for:
/// one that was away longer than the time to live can bring back a reaped document.
public struct CheckpointHorizon: TombstoneHorizon {
    let trust: TrustStore

    /// The horizon of the peers `trust` trusts.
    public init(trust: TrustStore) {
        self.trust = trust
    }

    private struct Reading {
        let writer: String?
        let at: Date
        let origin: ReplicationCheckpoint.Origin
        let sequence: Int64
    }

    public func hold(on collection: DocumentCollection) throws -> TombstoneHold {
        let keyspace = Keyspace(collection)
        let peers = try trust.trustedPeers().filter { $0.scope.allows(keyspace) }
        guard !peers.isEmpty else { return TombstoneHold() }
        let readings: [Reading] = try collection.localDocuments().compactMap { doc in
            guard let at = doc.writtenAt, case .dictionary(let json) = try? DocumentValue(json: doc.body) else { return nil }
            let checkpoint = ReplicationCheckpoint(json: json)
            guard let origin = checkpoint.origin, !origin.filtered, let sequence = Int64(checkpoint.sourceLastSequence) else { return nil }
            return Reading(writer: doc.writer, at: at, origin: origin, sequence: sequence)
        }
        return TombstoneHold(peers: peers.map { peer in
            let pulled = readings.filter { $0.writer == peer.name && $0.origin.direction == .pull && $0.origin.local == keyspace.name }
                .max { $0.at < $1.at }
            let pushed = peer.uuid.flatMap { uuid in
                readings.filter { $0.writer == nil && $0.origin.direction == .push && $0.origin.remote == "\(uuid)/\(keyspace.name)" }
                    .max { $0.at < $1.at }
            }
            guard let latest = [pulled, pushed].compactMap({ $0 }).max(by: { $0.sequence < $1.sequence }) else {
                return TombstoneHold.Peer(name: peer.name, sequence: 0, note: "has never checkpointed \(keyspace) here")
            }
            let how = latest.origin.direction == .pull ? "pulled" : "was pushed"
            return TombstoneHold.Peer(name: peer.name, sequence: latest.sequence,
                                      note: "\(how) through sequence \(latest.sequence) (checkpoint of \(latest.at.formatted(.iso8601)))")
        })
    }
}
