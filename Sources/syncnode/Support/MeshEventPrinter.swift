import Foundation
import Synchronization
import SyncNodeDiscovery
import SyncNodeMesh
import SyncNodeSync

/// `serve`'s log of its node: one line on stderr per change of its view of the network, and
/// each replication's progress lines.
final class MeshEventPrinter: Sendable {
    private let untrusted: UntrustedPeerReporter
    /// Per replication label: its progress lines and what was told of it.
    private let replications = Mutex<[String: Replication]>([:])

    private struct Replication {
        let reporter: ProgressReporter
        /// Whether the peer's refusal of this node's writes was told.
        var refusalTold = false
        /// The interruption told last, until the replication is caught up again.
        var interruption: String?
    }

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
            Output.progress("syncnode: peer \(peer.name) appeared at \(peer.host):\(peer.port) (uuid \(peer.uuid), dbs \(peer.record.keyspaces.map(\.name).joined(separator: ",")))")
        case .peerUpdated(let peer):
            Output.progress("syncnode: peer \(peer.name) updated: \(peer.host):\(peer.port), dbs \(peer.record.keyspaces.map(\.name).joined(separator: ","))")
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
        case .syncState(let peer, let keyspace, let sync) where sync.state == .inSync:
            Output.progress("syncnode: in sync with \(peer) on \(keyspace)")
        case .syncState(let peer, let keyspace, let sync):
            Output.progress("syncnode: no longer in sync with \(peer) on \(keyspace): \(sync.state.rawValue.replacingOccurrences(of: "_", with: " ")), \(sync.reason ?? "")")
        }
    }

    private func replication(_ label: String, _ status: ReplicatorStatus) {
        let (reporter, told) = replications.withLock { all in
            var entry = all[label] ?? Replication(reporter: ProgressReporter(label: label, inPlace: false))
            var told: [String] = []
            if let refusal = status.error as? CouchError, refusal.status == 403, status.activity != .stopped, !entry.refusalTold {
                entry.refusalTold = true
                told.append("\(label): the peer refuses this node's writes (\(refusal.reason)); pulling only")
            }
            // A peer that cannot be reached, or stops answering, is said once per reason (not per
            // retry), and its return once caught up: the log answers "are we in sync?".
            if status.activity == .offline, let error = status.error {
                let reason = "\(error)"
                if entry.interruption != reason { told.append("\(label): interrupted, retrying: \(reason)") }
                entry.interruption = reason
            } else if status.activity == .idle, entry.interruption != nil {
                entry.interruption = nil
                told.append("\(label): caught up again")
            } else if status.activity == .stopped {
                entry.interruption = nil
            }
            all[label] = entry
            return (entry.reporter, told)
        }
        reporter.show(status)
        if status.activity == .stopped, let error = status.error {
            Output.error("\(label) stopped: \(error)")
        }
        for line in told { Output.error(line) }
    }
}
