import Foundation
import Synchronization
import SyncNodeDiscovery
import SyncNodeMesh
import SyncNodeSync

/// `serve`'s log of its node: one line on stderr per change of its view of the network, and
/// each replication's progress lines.
final class MeshEventPrinter: Sendable {
    private let untrusted: UntrustedPeerReporter
    /// Per replication label: its progress lines, and whether its peer's refusal was told.
    private let replications = Mutex<[String: (reporter: ProgressReporter, refusalReported: Bool)]>([:])

    init(directory: URL) {
        untrusted = UntrustedPeerReporter(directory: directory)
    }

    func print(_ event: MeshEvent) {
        switch event {
        case .discovery(.unavailable(let reason)):
            Output.error("DNS-SD unavailable: \(reason)")
        case .discovery(.running):
            Output.progress("syncnode: DNS-SD available again")
        case .peerAppeared(let peer):
            Output.progress("syncnode: peer \(peer.name) appeared at \(peer.host):\(peer.port) (uuid \(peer.uuid), dbs \(peer.record.databases.joined(separator: ",")))")
        case .peerUpdated(let peer):
            Output.progress("syncnode: peer \(peer.name) updated: \(peer.host):\(peer.port), dbs \(peer.record.databases.joined(separator: ","))")
        case .peerLost(let peer):
            Output.progress("syncnode: peer \(peer.name) lost (uuid \(peer.uuid))")
        case .peerRefused(let peer, let reason):
            Output.progress("syncnode: not syncing with \(peer.name): \(reason)")
        case .nothingInCommon(let peer):
            Output.progress("syncnode: no database in common with \(peer.name) yet")
        case .untrustedClient(let fingerprint, let address):
            untrusted.report(fingerprint: fingerprint, address: address)
        case .replication(let label, let status):
            replication(label, status)
        }
    }

    private func replication(_ label: String, _ status: ReplicatorStatus) {
        let (reporter, tellRefusal) = replications.withLock { all in
            var entry = all[label] ?? (ProgressReporter(label: label, inPlace: false), false)
            let refused = (status.error as? CouchError)?.status == 403 && status.activity != .stopped
            let tell = refused && !entry.refusalReported
            if tell { entry.refusalReported = true }
            all[label] = entry
            return (entry.reporter, tell)
        }
        reporter.show(status)
        if status.activity == .stopped, let error = status.error {
            Output.error("\(label) stopped: \(error)")
        } else if tellRefusal, let refusal = status.error as? CouchError {
            Output.error("\(label): the peer refuses this node's writes (\(refusal.reason)); pulling only")
        }
    }
}
