import SyncNodeStore

/// Two revisions of a document that were edited apart: the local side's and
/// the one just pulled. A deleted side is nil.
public struct Conflict: Sendable {
    /// The conflicted document.
    public let documentID: String
    /// This side's revision (a leaf it had before the pull); nil when it is a deletion.
    public let localDocument: Document?
    /// The revision that arrived from the peer; nil when it is a deletion.
    public let remoteDocument: Document?
}

/// How a conflict ends.
public enum ConflictResolution: Sendable {
    /// The local revision wins.
    case local
    /// The pulled revision wins.
    case remote
    /// The document is deleted.
    case delete
    /// A new revision with this body wins (a child of the remote revision when
    /// it is live, else of the local one).
    case merged(body: [String: DocumentValue])

    /// A merged document's content as the winner.
    public static func merge(_ document: MutableDocument) -> ConflictResolution {
        .merged(body: document.snapshot())
    }
}

/// Ends the conflicts that pulled revisions create, so a document has one
/// live revision again; the losing branches get tombstones, which replicate
/// like any revision, so every node ends with the same tree.
///
/// ```swift
/// config.conflictResolver = ConflictResolver { conflict in
///     guard let local = conflict.localDocument, let remote = conflict.remoteDocument else { return .delete }
///     let merged = remote.toMutable()
///     merged.setInt(local.int(forKey: "likes") + remote.int(forKey: "likes"), forKey: "likes")
///     return .merge(merged)
/// }
/// ```
public struct ConflictResolver: Sendable {
    let resolve: @Sendable (Conflict) -> ConflictResolution

    /// A resolver that decides each conflict with `resolve`.
    public init(_ resolve: @escaping @Sendable (Conflict) -> ConflictResolution) {
        self.resolve = resolve
    }

    /// Couchbase Lite 3's rule, the same on every node: a deletion wins, else
    /// the higher generation, else the higher revision ID.
    public static let `default` = ConflictResolver { conflict in
        guard let local = conflict.localDocument, let remote = conflict.remoteDocument else { return .delete }
        if local.generation != remote.generation { return local.generation > remote.generation ? .local : .remote }
        return (local.revisionID ?? "") >= (remote.revisionID ?? "") ? .local : .remote
    }

    /// Resolves the conflicts among `document`'s leaves that `pulled` revisions
    /// created; returns whether it changed anything.
    @discardableResult
    func resolveConflicts(of id: String, pulled: Set<String>, in collection: DocumentCollection) throws -> Bool {
        // A local save between reading the leaves and writing the resolution makes the
        // store refuse it (`conflict`): look again, with the new leaves.
        var attempt = 1
        while true {
            do {
                return try resolveOnce(of: id, pulled: pulled, in: collection)
            } catch StoreError.conflict where attempt < 3 {
                attempt += 1
            }
        }
    }

    private func resolveOnce(of id: String, pulled: Set<String>, in collection: DocumentCollection) throws -> Bool {
        let leaves = try collection.leafRevisions(id: id)  // winner first
        guard leaves.count > 1 else { return false }
        let remote = leaves.filter { pulled.contains($0.rev) }
        let local = leaves.filter { !pulled.contains($0.rev) }
        // Live leaves on both sides, or (a new document arriving with conflicts) among the pulled ones.
        var pair: (local: StoredRevision, remote: StoredRevision)?
        for l in local.isEmpty ? Array(remote.prefix(1)) : local {
            if let r = remote.first(where: { $0.rev != l.rev && Self.conflict(l, $0) }) {
                pair = (l, r)
                break
            }
        }
        guard let (l, r) = pair else { return false }
        let conflict = Conflict(documentID: id, localDocument: collection.document(l), remoteDocument: collection.document(r))
        let seen = Set(leaves.map(\.rev))
        switch resolve(conflict) {
        case .local: try collection.resolveConflict(id: id, winner: l.deleted ? nil : l.rev, mergedBody: nil, seen: seen)
        case .remote: try collection.resolveConflict(id: id, winner: r.deleted ? nil : r.rev, mergedBody: nil, seen: seen)
        case .delete: try collection.resolveConflict(id: id, winner: nil, mergedBody: nil, seen: seen)
        case .merged(let body): try collection.resolveConflict(id: id, winner: r.deleted ? l.rev : r.rev, mergedBody: body, seen: seen)
        }
        return true
    }

    /// Two leaves conflict when both are live, or when one is a deletion made
    /// while the other side edited on (the tombstone's parent is an ancestor of
    /// the live leaf). A tombstone closing a branch that lost an earlier
    /// resolution is no conflict: its parent is a sibling, not an ancestor.
    static func conflict(_ a: StoredRevision, _ b: StoredRevision) -> Bool {
        switch (a.deleted, b.deleted) {
        case (false, false): return true
        case (true, true): return false
        case (true, false): return a.history.count > 1 && b.history.contains(a.history[1])
        case (false, true): return b.history.count > 1 && a.history.contains(b.history[1])
        }
    }
}
