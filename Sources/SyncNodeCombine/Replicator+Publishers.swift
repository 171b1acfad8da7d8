#if canImport(Combine)
import Combine
#else
import OpenCombine
#endif
import Dispatch
import SyncNodeStore
import SyncNodeSync

extension Replicator {
    /// The replicator's status changes as a publisher, delivered on `queue`
    /// (default: main). Cancel the subscription to stop listening.
    ///
    /// ```swift
    /// replicator.changePublisher()
    ///     .filter { $0.status.activity == .idle }
    ///     .sink { _ in print("caught up") }
    ///     .store(in: &subscriptions)
    /// ```
    public func changePublisher(on queue: DispatchQueue = .main) -> AnyPublisher<ReplicatorChange, Never> {
        ListenerPublisher.make(on: queue) { [self] send in addChangeListener(queue: queue, send) }
    }

    /// Each batch of documents replicated (or refused), as a publisher.
    public func documentReplicationPublisher(on queue: DispatchQueue = .main) -> AnyPublisher<DocumentReplication, Never> {
        ListenerPublisher.make(on: queue) { [self] send in addDocumentReplicationListener(queue: queue, send) }
    }
}
