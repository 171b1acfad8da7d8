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
/// Peers known only by a URL (`--sync-with`, `_replicate`, CouchDB, PouchDB) are not waited for,
/// unless named as ``Remote``s (the mesh names its hub): one that was away longer than the time
/// to live can bring back a reaped document.
public struct CheckpointHorizon: TombstoneHorizon {
    /// A replication target outside the trust store that must have received each tombstone
    /// first, such as a hub: this node's own push checkpoints tell how far it has.
    public struct Remote: Sendable, Equatable {
        /// Its name in reports (`hub`).
        public var name: String
        /// How this node's push checkpoints name it, `<server uuid>/<database>`
        /// (``Replicator/remoteIdentity``); nil while it has not been reached, which holds
        /// every tombstone back.
        public var identity: String?

        /// The target `name`, known to checkpoints as `identity`.
        public init(name: String, identity: String?) {
            (self.name, self.identity) = (name, identity)
        }
    }

    let trust: TrustStore
    let remotes: @Sendable (Keyspace) -> [Remote]

    /// The horizon of the peers `trust` trusts, and of the targets `remotes` names per keyspace.
    public init(trust: TrustStore, remotes: @escaping @Sendable (Keyspace) -> [Remote] = { _ in [] }) {
        self.trust = trust
        self.remotes = remotes
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
        let remotes = remotes(keyspace)
        guard !peers.isEmpty || !remotes.isEmpty else { return TombstoneHold() }
        let readings: [Reading] = try collection.localDocuments().compactMap { doc in
            guard let at = doc.writtenAt, case .dictionary(let json) = try? DocumentValue(json: doc.body) else { return nil }
            let checkpoint = ReplicationCheckpoint(json: json)
            guard let origin = checkpoint.origin, !origin.filtered, let sequence = Int64(checkpoint.sourceLastSequence) else { return nil }
            return Reading(writer: doc.writer, at: at, origin: origin, sequence: sequence)
        }
        /// Our latest push checkpoint to `remote`, `<uuid>/<database>`.
        func pushed(to remote: String) -> Reading? {
            readings.filter { $0.writer == nil && $0.origin.direction == .push && $0.origin.remote == remote }.max { $0.at < $1.at }
        }
        let held = peers.map { peer in
            let pulled = readings.filter { $0.writer == peer.name && $0.origin.direction == .pull && $0.origin.local == keyspace.name }
                .max { $0.at < $1.at }
            let pushed = peer.uuid.flatMap { pushed(to: "\($0)/\(keyspace.name)") }
            guard let latest = [pulled, pushed].compactMap({ $0 }).max(by: { $0.sequence < $1.sequence }) else {
                return TombstoneHold.Peer(name: peer.name, sequence: 0, note: "has never checkpointed \(keyspace) here")
            }
            let how = latest.origin.direction == .pull ? "pulled" : "was pushed"
            return TombstoneHold.Peer(name: peer.name, sequence: latest.sequence,
                                      note: "\(how) through sequence \(latest.sequence) (checkpoint of \(latest.at.formatted(.iso8601)))")
        }
        return TombstoneHold(peers: held + remotes.map { remote in
            guard let identity = remote.identity else {
                return TombstoneHold.Peer(name: remote.name, sequence: 0, note: "has not been reached yet")
            }
            guard let latest = pushed(to: identity) else {
                return TombstoneHold.Peer(name: remote.name, sequence: 0, note: "has never been pushed \(keyspace)")
            }
            return TombstoneHold.Peer(name: remote.name, sequence: latest.sequence,
                                      note: "was pushed through sequence \(latest.sequence) (checkpoint of \(latest.at.formatted(.iso8601)))")
        })
    }
}
