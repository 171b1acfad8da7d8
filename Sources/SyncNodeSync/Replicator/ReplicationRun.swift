import Foundation
import SyncNodeStore

/// One direction of a replication pass: the CouchDB replication algorithm
/// from `source` to `target`, until the source's feed is exhausted.
///
/// Batches are pipelined three deep: while batch n is written to the target
/// and checkpointed, batch n+1's revisions are compared (`_revs_diff`) and
/// fetched, and batch n+2's page of changes is read, so at most two batches of
/// documents are in memory. Reading a page of changes needs only the page
/// before it, so it need not wait for that page's documents.
struct ReplicationRun: Sendable {
    let replicator: Replicator
    let source: any ReplicationPeer
    let target: any ReplicationPeer
    let direction: ReplicationDirection
    let id: String
    /// The remote's identity, `<node uuid>/<database>`.
    let remoteID: String
    let reset: Bool

    private var config: ReplicatorConfiguration { replicator.config }

    /// This run's claims on the revisions it fetches, when it pulls into a local collection:
    /// the node's other replications of the collection wait for them instead of fetching them too.
    private let sharing: InFlightRevisions.Owner?

    /// The source's changes after `since`, as the long poll that woke this run brought them
    /// (empty when it timed out): the first page when the run starts from `since`, not asked for
    /// again. At a heartbeat the run reads both sides' checkpoints again, which say `since` too
    /// when the last pass saved its own: in an idle mesh, a request per peer a heartbeat.
    private let firstPage: (since: String, changes: PeerChanges)?
    /// The last pass's checkpointer, when this run goes on from it without reading the checkpoints.
    private let resuming: Checkpointer?

    init(replicator: Replicator, source: any ReplicationPeer, target: any ReplicationPeer, direction: ReplicationDirection,
         id: String, remoteID: String, reset: Bool, firstPage: (since: String, changes: PeerChanges)? = nil, resuming: Checkpointer? = nil) {
        self.replicator = replicator
        self.source = source
        self.target = target
        self.direction = direction
        self.id = id
        self.remoteID = remoteID
        self.reset = reset
        self.firstPage = firstPage
        self.resuming = resuming
        sharing = (target as? LocalDatabase).flatMap { InFlightRevisions.shared.owner(for: $0.collection) }
    }

    /// A batch read from the source, ready to write.
    private struct Batch: Sendable {
        let rows: Int
        let lastSeq: String
        let pending: Int?
        let docs: [WireRevision]
    }

    /// Runs until caught up; returns the revisions written, the source sequence reached, and the
    /// checkpointer, which the next pass of a continuous replication may go on with.
    func run() async throws -> (written: Int, since: String, checkpointer: Checkpointer) {
        guard config.batchSize > 0 else { throw SyncError.invalidConfiguration("batchSize must be at least 1, not \(config.batchSize)") }
        // A push or pull filter skips changes too: such a checkpoint vouches for nothing it skipped.
        let feedFilter = try replicator.changeFilter(direction)
        let filtered = feedFilter != .all || (direction == .push ? config.pushFilter != nil : config.pullFilter != nil)
        let origin = ReplicationCheckpoint.Origin(direction: direction, remote: remoteID, local: Keyspace(config.collection).name, filtered: filtered)
        defer { sharing.map { $0.registry.release($0) } }
        var checkpointer = if let resuming { resuming } else {
            try await Checkpointer(replicator: replicator, source: source, target: target, id: id, origin: origin, reset: reset)
        }
        var written = 0
        replicator.logger.debug("replicating", metadata: ["direction": "\(direction.rawValue)", "since": "\(checkpointer.since)"])
        let first = if let firstPage, firstPage.since == checkpointer.since {
            worthReplicating(firstPage.changes, since: firstPage.since, filter: feedFilter)
        } else {
            try await changes(since: checkpointer.since)
        }
        var next = try await fetch(first)
        var nextChanges = try await changes(after: first)
        while let batch = next {
            let upcoming = nextChanges
            async let following = fetch(upcoming)
            async let afterThat = changes(after: upcoming)
            let wrote = try await write(batch)
            written += wrote
            let saving = Self.saves(rows: checkpointer.unsavedRows + batch.rows, wrote: wrote, continuous: config.continuous, filtered: filtered)
            try await checkpointer.reached(batch.lastSeq, saving: saving, rows: batch.rows)
            replicator.examined(direction, upTo: batch.lastSeq)
            next = try await following
            nextChanges = try await afterThat
        }
        replicator.examined(direction, upTo: checkpointer.since)
        return (written, checkpointer.since, checkpointer)
    }

    /// Whether a batch's checkpoint is saved (`rows`: the batch's and those examined since the
    /// last save, by this pass or the ones its checkpointer came from). A continuous pass that
    /// wrote nothing, over a short page, saves none: in a mesh, each revision that reaches a
    /// node wakes every peer's pull from it, and all but one find nothing new, yet each saved a
    /// checkpoint on both sides (in ten nodes, about 80 requests and 160 transactions a write).
    /// The next pass examines those few changes again from the last checkpoint saved, which at
    /// most this many keep. A filtered pass always saves: the changes its filter skipped are not
    /// counted in its rows, and its checkpoint is what spares the next pass reading them all again.
    static func saves(rows: Int, wrote: Int, continuous: Bool, filtered: Bool) -> Bool {
        !continuous || filtered || wrote > 0 || rows >= unsavedRowsLimit
    }

    static let unsavedRowsLimit = 20

    /// The page of the source's changes after `since`; nil when the feed has nothing more.
    private func changes(since: String) async throws -> PeerChanges? {
        let filter = try replicator.changeFilter(direction)
        let changes = try await replicator.withRetries {
            try await source.changes(since: since, limit: config.batchSize, filter: filter)
        }
        return worthReplicating(changes, since: since, filter: filter)
    }

    /// `changes`, the source's after `since`, as a page to replicate; nil when there is nothing
    /// in it. A filtered page without rows that moved on is still a batch (of nothing): its
    /// checkpoint spares the next pass the changes the filter skipped.
    private func worthReplicating(_ changes: PeerChanges, since: String, filter: ChangeFilter) -> PeerChanges? {
        if changes.rows.isEmpty, filter == .all || changes.lastSeq == since { return nil }
        return accepted(changes)
    }

    /// A page of changes to replicate, counted in the progress.
    private func accepted(_ changes: PeerChanges) -> PeerChanges {
        replicator.update { status in
            status.progress.total = max(status.progress.total, status.progress.completed + changes.rows.count + (changes.pending ?? 0))
        }
        return changes
    }

    /// The page after `changes` (nil after the last). A filtered page without rows means the
    /// source read to its end: it is checkpointed and ends the pass, even when the source names
    /// its end differently each time (a CouchDB cluster's opaque sequences may). So does a page
    /// short of the limit that says nothing is pending (or says nothing): asking again would cost
    /// every pass a request (in a mesh of ten, 90 a write), and what comes later wakes the long
    /// poll. A full page is always followed, whatever its `pending` says (a cluster's is an
    /// estimate), and so is a short one with changes pending (a source that caps the limit).
    private func changes(after changes: PeerChanges?) async throws -> PeerChanges? {
        guard let changes, !changes.rows.isEmpty, changes.rows.count >= config.batchSize || (changes.pending ?? 0) > 0 else { return nil }
        return try await self.changes(since: changes.lastSeq)
    }

    /// A page of changes as a batch: the revisions the target lacks, fetched
    /// (attachments the target has stay stubs) and filtered.
    private func fetch(_ changes: PeerChanges?) async throws -> Batch? {
        guard let changes else { return nil }
        var asked: [String: [String]] = [:]
        for row in changes.rows { asked[row.id, default: []].append(contentsOf: row.revs) }
        let question = asked
        var missing = question.isEmpty ? [:] : try await replicator.withRetries { try await target.revsDiff(question) }
        var docs: [WireRevision] = []
        if !missing.isEmpty {
            // In the feed's order, not the dictionary's: the source reads its rows, and the target
            // writes them, in the order they lie in (each page read once, not once per document).
            var wanted: [WantedRevisions] = []
            wanted.reserveCapacity(missing.count)
            // A row that came with its revision (a node's long poll) needs no fetch.
            var carried: [(row: Int, revision: WireRevision)] = []
            for (index, row) in changes.rows.enumerated() {
                guard let diff = missing.removeValue(forKey: row.id) else { continue }
                if let revision = row.revision, diff.missing == [revision.rev] {
                    carried.append((index, revision))
                } else {
                    wanted.append(WantedRevisions(id: row.id, revs: diff.missing, attsSince: diff.possibleAncestors))
                }
            }
            // Held until stored, as fetched revisions are (see `Replicator.syncCheck()`), from
            // before the fetch of the rest.
            if !carried.isEmpty { sharing.map { $0.registry.received(carried.map(\.revision), by: $0) } }
            let asking = wanted
            docs = asking.isEmpty ? [] : try await replicator.withRetries { try await fetchShared(asking) }
            if !carried.isEmpty { docs = Self.inFeedOrder(docs, of: changes.rows.map(\.id), carried: carried) }
        }
        if let filter = direction == .push ? config.pushFilter : config.pullFilter {
            var dropped: [WireRevision] = []
            docs = try docs.filter { doc in
                let document = Document(id: doc.id, revisionID: doc.rev, isDeleted: doc.deleted, values: try doc.bodyValues())
                let kept = filter(document, doc.deleted ? .deleted : [])
                if !kept { dropped.append(doc) }
                return kept
            }
            // What the filter drops is never stored: no other replication waits for it longer.
            sharing.map { $0.registry.stored(dropped, by: $0) }
        }
        return Batch(rows: changes.rows.count, lastSeq: changes.lastSeq, pending: changes.pending, docs: docs)
    }

    /// The revisions `wanted`, ready to store. Those another replication into the same collection
    /// is fetching are taken from it, in the feed's order with the rest; those it fails to bring
    /// are fetched from this run's source.
    private func fetchShared(_ wanted: [WantedRevisions]) async throws -> [WireRevision] {
        guard let sharing else { return try await fetchFromSource(wanted) }
        let (mine, theirs) = sharing.registry.claim(wanted, by: sharing)
        var docs: [WireRevision] = []
        if !mine.isEmpty {
            do {
                docs = try await fetchFromSource(mine)
            } catch {
                sharing.registry.failed(mine, by: sharing)
                throw error
            }
            sharing.registry.fetched(docs, for: mine, by: sharing)
        }
        guard !theirs.isEmpty else { return docs }
        var failed: [String: [String]] = [:]
        for key in theirs {
            if let doc = await sharing.registry.result(of: key) { docs.append(doc) } else { failed[key.id, default: []].append(key.rev) }
        }
        if !failed.isEmpty {
            let again = wanted.compactMap { want in failed[want.id].map { WantedRevisions(id: want.id, revs: $0, attsSince: want.attsSince) } }
            replicator.logger.debug("fetching revisions another replication failed to bring", metadata: ["revisions": "\(again.count)"])
            docs += try await fetchFromSource(again)
        }
        return Self.inFeedOrder(docs, of: wanted.map(\.id))
    }

    private func fetchFromSource(_ wanted: [WantedRevisions]) async throws -> [WireRevision] {
        try await target.receiving(try await source.fetch(wanted), wanted: wanted, from: source)
    }

    /// `docs` in the order of `ids` (where each document's ID first lies), merged with `carried`
    /// revisions placed at their rows of `ids`. Stable: a document's revisions keep their order.
    static func inFeedOrder(_ docs: [WireRevision], of ids: [String], carried: [(row: Int, revision: WireRevision)] = []) -> [WireRevision] {
        let position = Dictionary(ids.enumerated().map { ($1, $0) }, uniquingKeysWith: { first, _ in first })
        let fetched = docs.map { (row: position[$0.id] ?? 0, revision: $0) }
        return (fetched + carried).enumerated().sorted { ($0.element.row, $0.offset) < ($1.element.row, $1.offset) }.map(\.element.revision)
    }

    /// `docs` in order, cut where the next document would take a part past `maxBytes` of JSON
    /// (a document larger than that is a part of its own).
    static func parts(of docs: [WireRevision], maxBytes: Int) -> [[WireRevision]] {
        var parts: [[WireRevision]] = []
        var bytes = 0
        for doc in docs {
            let size = doc.body.bytes.count + doc.inlineAttachmentBytes + 256  // and the other `_` members
            if parts.isEmpty || bytes + size > maxBytes, !(parts.last?.isEmpty ?? false) {
                parts.append([])
                bytes = 0
            }
            parts[parts.count - 1].append(doc)
            bytes += size
        }
        return parts
    }

    /// Stores `docs`; a 413 (too large) answer halves them, down to single documents, and a
    /// document too large alone is refused with that answer while the others go on.
    private func store(_ docs: [WireRevision]) async throws -> StoredBatch {
        do {
            return try await replicator.withRetries { try await target.store(docs) }
        } catch let error as CouchError where error.status == 413 {
            guard docs.count > 1 else { return StoredBatch(refused: [(docs[0].id, error)]) }
            replicator.logger.notice("the target refused a request as too large; sending it in halves", metadata: ["documents": "\(docs.count)"])
            let half = docs.count / 2
            var stored = try await store(Array(docs[..<half]))
            stored.add(try await store(Array(docs[half...])))
            return stored
        }
    }

    /// Writes a batch to the target, ends the conflicts pulled revisions
    /// created, and reports what happened; returns the revisions written.
    private func write(_ batch: Batch) async throws -> Int {
        var refusedIDs: [String: CouchError] = [:]
        if !batch.docs.isEmpty {
            let docs = batch.docs
            var stored = StoredBatch()
            for part in Self.parts(of: docs, maxBytes: config.maxRequestBytes) {
                stored.add(try await store(part))
            }
            for (id, error) in stored.refused {
                replicator.logger.warning("a document was not replicated", metadata: [
                    "id": "\(id)", "reason": "\(error)", "direction": "\(direction.rawValue)",
                ])
                refusedIDs[id] = error
            }
            if direction == .pull, let resolver = config.conflictResolver {
                try ConflictStage(resolver: resolver, collection: config.collection, logger: replicator.logger)
                    .resolve(pulled: docs, branched: stored.branched)
            }
        }
        sharing.map { $0.registry.stored(batch.docs, by: $0) }
        let written = batch.docs.count - batch.docs.filter { refusedIDs[$0.id] != nil }.count
        replicator.update { status in
            status.progress.completed += batch.rows
            status.progress.total = max(status.progress.total, status.progress.completed + (batch.pending ?? 0))
            switch direction {
            case .push: status.result.pushed += written
            case .pull: status.result.pulled += written
            }
            status.result.failed += batch.docs.count - written
        }
        replicator.report(direction) {
            batch.docs.map { doc in
                ReplicatedDocument(
                    id: doc.id, revisionID: doc.rev, flags: doc.deleted ? .deleted : [],
                    error: refusedIDs[doc.id])
            }
        }
        return written
    }
}
