import Foundation
import SyncNodeStore
import SyncNodeSync

/// A continuous replication of one collection with one peer, reporting every state change.
final class PeerReplication: Sendable {
    let replicator: Replicator
    private let token: ListenerToken

    init(
        collection: DocumentCollection, url: URL, configuration: MeshConfiguration, type: ReplicatorType, trustOnFirstUse: Bool,
        report: @escaping @Sendable (ReplicatorStatus) -> Void
    ) throws {
        var config = ReplicatorConfiguration(collection: collection, target: .url(url))
        config.replicatorType = type
        // The node signs in with its certificate too: a peer that trusts it needs no password.
        config.clientIdentity = configuration.listener.disableTLS ? nil : try configuration.directory.tlsIdentity()
        config.continuous = true
        config.conflictResolver = configuration.conflictResolver
        config.acceptOnlySelfSignedServerCertificate = trustOnFirstUse
        // A LAN peer that drops out is usually back within seconds (a partition heals, a node restarts).
        config.maxAttemptWaitTime = .seconds(5)
        replicator = Replicator(config: config)
        token = replicator.addChangeListener { report($0.status) }
        replicator.start()
    }

    /// Stops after the batch in flight (its checkpoint is saved).
    func stop() async {
        replicator.stop()
        await replicator.waitUntilStopped()
        token.remove()
    }
}
