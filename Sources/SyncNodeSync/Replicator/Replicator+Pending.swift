import Foundation
import SyncNodeStore

/// What a replication has not moved yet: counts each way (``pendingChanges()``), digest roots
/// compared (``digestsMatch()``), and the documents the next push would send (``pendingDocumentIDs()``).
extension Replicator {
    /// The source sequence `direction` has examined up to; ``pendingChanges()`` counts from it.
    func examined(_ direction: ReplicationDirection, upTo sequence: String) {
        state.withLock { s in
            switch direction {
            case .push: s.pushedUpTo = sequence
            case .pull: s.pulledUpTo = sequence
            }
        }
    }

    /// How many changes each side has that this replication has not examined yet: local
    /// changes after the push checkpoint, and the peer's after the pull checkpoint, which the
    /// peer is asked for. Zero both ways, while ``ReplicatorStatus/activity`` is `idle`, means
    /// nothing is left to move: a continuous replicator that is idle while the peer has changes
    /// its feed did not announce yet shows them here.
    ///
    /// A direction this replicator does not run is nil.
    /// - Throws: ``SyncError/connectionFailed(_:)`` when a continuous replicator has not connected yet
    ///   (or no pass has ended), and the peer's errors when it cannot be asked; `StoreError` when the local
    ///   store fails.
    public func pendingChanges() async throws -> PendingChanges {
        try await pendingChanges(knownPull: nil)
    }

    /// ``pendingChanges()``, with the pull count `knownPull` when the peer already gave it.
    private func pendingChanges(knownPull: Int?) async throws -> PendingChanges {
        let (remote, pulled) = state.withLock { ($0.connected, $0.pulledUpTo) }
        // A push the peer refuses never runs: everything since the start is pending, not unknown.
        let pushed = state.withLock { $0.pushedUpTo ?? ($0.pushRefusal == nil ? nil : "0") }
        var pending = PendingChanges()
        if let knownPull {
            pending.pull = knownPull
        } else if config.replicatorType != .push {
            let filter = try changeFilter(.pull)
            guard let remote, let pulled else { throw SyncError.connectionFailed("the replicator has not finished a pass with the peer yet") }
            // A peer that does not count, or a filter, which counts would not heed: the rows
            // themselves, one page's worth.
            if filter == .all, let counted = try await remote.pendingChanges(since: pulled) {
                pending.pull = counted
            } else {
                pending.pull = try await remote.changes(since: pulled, limit: config.batchSize, filter: filter).rows.count
            }
        }
        if config.replicatorType != .pull {
            guard let pushed else { throw SyncError.connectionFailed("the replicator has not finished a pass with the peer yet") }
            let filter = try changeFilter(.push)
            if filter == .all {
                pending.push = try config.collection.changeCount(since: Int64(pushed) ?? 0)
            } else {
                pending.push = try await LocalDatabase(collection: config.collection).changes(since: pushed, limit: 100_000, filter: filter).rows.count
            }
        }
        return pending
    }

    /// Whether both sides hold the same documents at the same winning revisions, by their
    /// `CollectionDigest` roots; nil when the peer serves no digest (CouchDB, PouchDB). It sees
    /// what ``pendingChanges()`` cannot: changes that cross in the direction this replicator
    /// does not run (a pull-only replicator's peer pulling from here). A filtered replication
    /// (``ReplicatorConfiguration/documentIDs`` or ``ReplicatorConfiguration/selector``) is nil
    /// too: digests cover whole collections, and its sides are meant to differ.
    /// - Throws: ``SyncError/connectionFailed(_:)`` when a continuous replicator is not connected,
    ///   and the peer's errors when it cannot be asked; `StoreError` when the local store fails.
    public func digestsMatch() async throws -> Bool? {
        guard !config.isFiltered else { return nil }
        guard let remote = state.withLock({ $0.connected }) else {
            throw SyncError.connectionFailed("the replicator is not connected to the peer")
        }
        guard let theirs = try await remote.digestRoot(pendingSince: nil) else { return nil }
        return try config.collection.digest().root == theirs.root
    }

    /// ``pendingChanges()`` and ``digestsMatch()`` together. A SyncNode peer answers both in one
    /// request (its digest, with the changes it has after this replicator's pull position); a
    /// sync check that asked twice was a third of the requests a mesh of ten made per write.
    /// Others are asked as those two methods ask.
    /// - Throws: what ``pendingChanges()`` and ``digestsMatch()`` throw.
    ///
    /// Right after a pass that a node's long poll started, its answer's digest root stands in for
    /// the request when it equals this side's: in a mesh every write wakes such a pass in each
    /// replication, and their sync checks were half the requests a write cost twenty nodes.
    /// Not while another pull into the collection holds revisions it has fetched with
    /// `_bulk_get`, or received in its long poll's rows, and not yet stored
    /// (``InFlightRevisions``): the peer may hold them already, relayed from the same source,
    /// and wake this side's long poll only a second later (`Handlers.coveredWakeDelay`), so a
    /// check in that second would take the old root and say in sync with it. What is left: the
    /// milliseconds between the source's answer reaching this node and the pull holding its
    /// revisions (after its `_revs_diff`), and a revision another pull held first, once that
    /// pull lets go of it (its fetch failed, or it ended) before this one has stored its own
    /// copy. Nothing is held when sharing is off (`InFlightRevisions.isEnabled`, for
    /// benchmarks).
    public func syncCheck() async throws -> (pending: PendingChanges, digestsMatch: Bool?) {
        let (remote, pulled, answered) = state.withLock { s in
            defer { s.answeredRoot = nil }
            return (s.connected, s.pulledUpTo, s.answeredRoot)
        }
        guard !config.isFiltered, config.replicatorType != .push, let remote, let pulled else {
            return (try await pendingChanges(), try await digestsMatch())
        }
        if let answered, answered.lastSeq == pulled, answered.at.duration(to: .now) < Self.answeredRootLifetime,
           InFlightRevisions.shared.held(in: config.collection).revisions == 0,
           try config.collection.digest().root == answered.root {
            return (try await pendingChanges(knownPull: answered.pending ?? 0), true)
        }
        let theirs = try await remote.digestRoot(pendingSince: pulled)
        let pending = try await pendingChanges(knownPull: theirs?.pending)
        return (pending, try theirs.map { try config.collection.digest().root == $0.root })
    }

    /// How long a long poll's digest root stands in for asking: about as long as a sync check
    /// waits after a pass (``SyncAudit``), so that it is a look at the peer as recent as one
    /// it would make.
    static let answeredRootLifetime = Duration.seconds(3)

    /// The local documents changed since the last push checkpoint (after the
    /// `documentIDs` or `selector`, and push filters): what the next push would send.
    /// Needs the peer's identity: the configured `remoteUUID`, the one seen by
    /// an earlier run, or else it asks the peer.
    /// - Throws: ``SyncError/invalidConfiguration(_:)`` for a pull-only replicator; the errors of
    ///   ``runOnce(reset:)`` for reaching the peer (without retries) when no earlier run learnt its
    ///   identity; `StoreError` when the local store fails.
    public func pendingDocumentIDs() async throws -> Set<String> {
        guard config.replicatorType != .pull else {
            throw SyncError.invalidConfiguration("pending documents are known for push replications only")
        }
        var remoteID = state.withLock { $0.remoteIdentity }
        // A pairing URL's uuid names the peer without a connection: this works offline too.
        if remoteID == nil, case .url(let url) = config.target, let uuid = config.remoteUUID {
            remoteID = HTTPRemote.identity(of: url, uuid: uuid)
        }
        if remoteID == nil {
            remoteID = try await withPeer { remote in try await identity(of: remote) }
        }
        let local = LocalDatabase(collection: config.collection)
        let checkpoint = try await local.checkpoint(try replicationID(remoteID: remoteID ?? "", direction: .push))
        var since = checkpoint?.sourceLastSequence ?? "0"
        var pending = Set<String>()
        let feedFilter = try changeFilter(.push)
        while true {
            let page = try await local.changes(since: since, limit: 1000, filter: feedFilter)
            for row in page.rows {
                if let filter = config.pushFilter, let revision = try config.collection.revision(id: row.id) {
                    let document = config.collection.document(revision)
                        ?? Document(id: row.id, revisionID: revision.rev, isDeleted: true, values: [:])
                    guard filter(document, revision.deleted ? .deleted : []) else { continue }
                }
                pending.insert(row.id)
            }
            if page.rows.isEmpty || page.lastSeq == since { return pending }
            since = page.lastSeq
        }
    }

    /// Whether the next push would send this document.
    /// - Throws: the errors of ``pendingDocumentIDs()``.
    public func isDocumentPending(id: String) async throws -> Bool {
        try await pendingDocumentIDs().contains(id)
    }
}
