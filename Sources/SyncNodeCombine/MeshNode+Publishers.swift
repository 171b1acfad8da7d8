#if canImport(SyncNodeMesh)
#if canImport(Combine)
import Combine
#else
import OpenCombine
#endif
import Dispatch
import SyncNodeMesh

extension MeshNode {
    /// The node's peers now and after each change, as a publisher delivered on `queue`
    /// (default: main). Cancel the subscription to stop listening.
    ///
    /// ```swift
    /// node.peersPublisher()
    ///     .map { $0.filter(\.trusted).map(\.name) }
    ///     .sink { names in print("syncing with", names) }
    ///     .store(in: &subscriptions)
    /// ```
    public func peersPublisher(on queue: DispatchQueue = .main) -> AnyPublisher<[MeshPeer], Never> {
        ListenerPublisher.make(on: queue) { [self] send in addPeersListener(queue: queue, send) }
    }
}
#endif
