#if canImport(Combine)
import Combine
#else
import OpenCombine
#endif
import Dispatch
import SyncNodeStore

extension DocumentCollection {
    /// One event per committed transaction that changed documents of the
    /// collection, in commit order, delivered on `queue` (default: main).
    public func changePublisher(on queue: DispatchQueue = .main) -> AnyPublisher<CollectionChange, Never> {
        ListenerPublisher.make(on: queue) { [self] send in addChangeListener(queue: queue, listener: send) }
    }

    /// One event per committed transaction that changed the document `id`
    /// (saved, deleted, purged or expired), delivered on `queue` (default: main).
    public func documentChangePublisher(for id: String, on queue: DispatchQueue = .main) -> AnyPublisher<DocumentChange, Never> {
        ListenerPublisher.make(on: queue) { [self] send in addDocumentChangeListener(id: id, queue: queue, listener: send) }
    }
}
