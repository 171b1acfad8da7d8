import Dispatch

/// The documents one committed transaction changed in a collection.
public struct CollectionChange: Sendable {
    /// The collection that changed.
    public let collection: DocumentCollection
    /// The IDs of the changed documents (saved, deleted, purged or expired), in change order.
    public let documentIDs: [String]
}

/// A change to one document.
public struct DocumentChange: Sendable {
    /// The collection the document is in.
    public let collection: DocumentCollection
    /// The ID of the document that changed (saved, deleted, purged or expired).
    public let documentID: String
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
