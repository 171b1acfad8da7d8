import Dispatch

/// The documents one committed transaction changed in a collection.
public struct CollectionChange: Sendable {
    /// The collection that changed.
    public let collection: DocumentCollection
    /// Each changed document (saved, deleted, purged or expired) as the commit left it, with
    /// where the change came from, in change order; a document changed twice in the transaction
    /// is there once, as it ended.
    public let documents: [ChangedDocument]

    /// The IDs of the changed documents, in change order.
    public var documentIDs: [String] { documents.map(\.id) }
}

/// A change to one document.
public struct DocumentChange: Sendable {
    /// The collection the document is in.
    public let collection: DocumentCollection
    /// The document as the commit left it, with where the change came from.
    public let document: ChangedDocument

    /// The ID of the document that changed (saved, deleted, purged or expired).
    public var documentID: String { document.id }
}

/// Returned by `addChangeListener` calls; call ``remove()`` to stop listening.
public final class ListenerToken: Sendable {
    private let onRemove: @Sendable () -> Void

    package init(onRemove: @escaping @Sendable () -> Void) {
        self.onRemove = onRemove
    }

    /// Stops the listener. Deliveries already queued may still run.
    public func remove() { onRemove() }
}
