import Observation
import Synchronization

/// A node's peers as an `@Observable` model, for SwiftUI views and any other Observation
/// user: ``peers`` follows ``MeshNode/peerUpdates()`` on the main actor.
///
/// ```swift
/// @State var presence = MeshPresence(node: node)
/// // List(presence.peers) { peer in Text("\(peer.name) \(peer.trusted ? "trusted" : "")") }
/// ```
///
/// It follows the node until it stops, until ``stop()``, or until it is released.
@MainActor
@Observable
public final class MeshPresence {
    /// The node's peers, as ``MeshNode/peers``.
    public private(set) var peers: [MeshPeer] = []

    @ObservationIgnored private let following = Following()

    public init(node: MeshNode) {
        let updates = node.peerUpdates()
        following.set(Task { [weak self] in
            for await peers in updates {
                guard let self else { return }
                self.peers = peers
            }
        })
    }

    deinit { following.cancel() }

    /// Stops following the node; ``peers`` keeps its last value.
    public func stop() { following.cancel() }

    /// The task that follows the node, cancellable from `deinit` (which is not on the main actor).
    private final class Following: Sendable {
        private let task = Mutex<Task<Void, Never>?>(nil)
        func set(_ task: Task<Void, Never>) { self.task.withLock { $0 = task } }
        func cancel() { task.withLock { $0?.cancel() } }
    }
}
