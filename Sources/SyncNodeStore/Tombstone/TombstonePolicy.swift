/// When a database forgets its tombstones.
///
/// A deleted document leaves a tombstone so that peers learn of the deletion. Kept forever,
/// tombstones add up; forgotten too early, they let a peer that never heard of the deletion
/// bring the document back. A tombstone is reaped (purged) once it is older than
/// ``timeToLive`` *and* the ``horizon`` says every peer has read past it.
///
/// ```swift
/// db.tombstonePolicy = TombstonePolicy(timeToLive: .seconds(30 * 86_400), horizon: peers)
/// ```
///
/// Without a horizon, age alone decides: right for a database no peer replicates.
public struct TombstonePolicy: Sendable {
    /// How long a tombstone is kept at least.
    public var timeToLive: Duration
    /// Who must have read a tombstone before it goes; nil: nobody.
    public var horizon: (any TombstoneHorizon)?

    /// A policy keeping tombstones `timeToLive`, and until `horizon` lets them go.
    public init(timeToLive: Duration, horizon: (any TombstoneHorizon)? = nil) {
        self.timeToLive = timeToLive
        self.horizon = horizon
    }

    var seconds: Double {
        let parts = timeToLive.components
        return Double(parts.seconds) + Double(parts.attoseconds) / 1e18
    }
}

/// How far the peers of a collection have read its changes: the layer that replicates
/// knows (the store does not know its peers).
public protocol TombstoneHorizon: Sendable {
    /// The sequence of `collection` up to which every peer has read its changes.
    /// - Throws: when it cannot be told; nothing is reaped then.
    func hold(on collection: DocumentCollection) throws -> TombstoneHold
}

/// How far each peer that must see a collection's tombstones has read its changes.
public struct TombstoneHold: Sendable, Equatable {
    /// A peer, and how far it has read.
    public struct Peer: Sendable, Equatable {
        /// Its name (`peer:<uuid>`).
        public var name: String
        /// It has read the changes up to this sequence (0: none known).
        public var sequence: Int64
        /// How that is known, for people ("checkpointed at ...", "has never checkpointed here").
        public var note: String

        /// A peer `name` that has read up to `sequence`, as `note` says.
        public init(name: String, sequence: Int64, note: String) {
            (self.name, self.sequence, self.note) = (name, sequence, note)
        }
    }

    /// Every peer that must see the tombstones; none: tombstones go by age alone.
    public var peers: [Peer]

    /// The peers `peers`.
    public init(peers: [Peer] = []) {
        self.peers = peers
    }

    /// The sequence every peer has read up to; nil when there is no peer.
    public var sequence: Int64? { peers.map(\.sequence).min() }
}

/// A collection's tombstones under a ``TombstonePolicy``: what ``Database/reapTombstones(now:)``
/// found, or what ``Database/tombstoneReport(now:)`` sees.
public struct TombstoneReport: Sendable, Equatable {
    /// The collection's full name (`scope.collection`).
    public var collection: String
    /// Tombstones held now.
    public var tombstones: Int
    /// Those known to be older than the time to live (their age is counted from when the
    /// policy first saw their sequence).
    public var expired: Int
    /// Expired ones the horizon still holds back.
    public var waiting: Int
    /// Reaped by this pass (0 for a report).
    public var reaped: Int
    /// Who holds the waiting ones back.
    public var holders: [String]
}
