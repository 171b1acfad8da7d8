import Foundation
import Synchronization
import SyncNodeStore
import SyncNodeSync

/// A continuous push/pull replication with one peer that reports on stderr:
/// progress lines, and one line if it stops on an error.
final class PeerSync: Sendable {
    let replicator: Replicator
    private let tokens: [ListenerToken]

    init(collection: DocumentCollection, url: URL, identity: TLSIdentity?, trustOnFirstUse: Bool, conflicts: ConflictPolicy, label: String) {
        var config = ReplicatorConfiguration(collection: collection, target: .url(url))
        config.clientIdentity = identity
        config.continuous = true
        config.conflictResolver = conflicts.resolver
        config.acceptOnlySelfSignedServerCertificate = trustOnFirstUse
        // A LAN peer that drops out is usually back within seconds (a partition heals, a node restarts).
        config.maxAttemptWaitTime = .seconds(5)
        replicator = Replicator(config: config)
        let reporter = ProgressReporter(label: label, inPlace: false)
        let refusalReported = Mutex(false)
        let failures = replicator.addChangeListener { change in
            if change.status.activity == .stopped, let error = change.status.error {
                Output.error("\(label) stopped: \(error)")
            } else if let refusal = change.status.error as? CouchError, refusal.status == 403,
                      refusalReported.withLock({ reported in
                          defer { reported = true }
                          return !reported
                      }) {
                Output.error("\(label): the peer refuses this node's writes (\(refusal.reason)); pulling only")
            }
        }
        tokens = [reporter.attach(to: replicator), failures]
        replicator.start()
    }

    /// Stops after the batch in flight (its checkpoint is saved).
    func stop() async {
        replicator.stop()
        await replicator.waitUntilStopped()
        tokens.forEach { $0.remove() }
    }
}
