/// One document as a committed change left it, and where the change came from.
public struct ChangedDocument: Sendable, Equatable {
    /// The document's ID.
    public let id: String
    /// Its winning revision after the change; nil when the change removed it (a purge or an
    /// expiry: no tombstone, nothing left).
    public let revisionID: String?
    /// Whether the winning revision is a deletion (a tombstone); true for a removed document too.
    public let isDeleted: Bool
    /// Whether the document now has more than one live leaf revision: a conflict (see
    /// ``DocumentCollection/conflictedDocumentIDs()``).
    public let isConflicted: Bool
    /// Who made the change: this app (``WriteAuthor/Origin/local``, which also covers another
    /// process writing the same data directory, such as the `syncnode` CLI), a client of the
    /// node's listener (``WriteAuthor/Origin/client``, a REST client or a peer pushing), or this
    /// node's replicator pulling from a peer (``WriteAuthor/Origin/replication(peer:)``).
    public let origin: WriteAuthor.Origin

    /// Whether the change removed the document (purge or expiry).
    public var isRemoved: Bool { revisionID == nil }

    /// A document the change removed.
    static func removed(_ id: String) -> ChangedDocument {
        ChangedDocument(id: id, revisionID: nil, isDeleted: true, isConflicted: false, origin: .local)
    }
}
