import NIOCore
import Synchronization

/// The peers that hold a connection to a listener and were heard from in the last few seconds,
/// by the fingerprint of the certificate they presented: a peer that pulls from this node
/// holds its long poll open all the time, so it is known to be there without asking.
///
/// The listener's connections are kept alive by TCP (``PeerPresenceHandler``): the kernel asks
/// a quiet peer every second, and the peer's kernel answers, at no cost to either process. A
/// connection counts while its peer's last acknowledgement or data came within ``recent``
/// (`TCP_INFO`): a peer that vanishes, or whose link goes down while this side still has data
/// for it, stops counting within that time, though its connection lingers. Discovery then need
/// not ask a connected peer `GET /` every few seconds itself (in a mesh of twenty, those
/// checks were most of an idle node's requests).
package final class ConnectedPeers: Sendable {
    /// How long ago a connection's peer must have been heard from for it to count.
    package static let recent = 3000

    private let connections = Mutex<[String: [ObjectIdentifier: any Channel]]>([:])

    package init() {}

    /// Whether a client that presented the certificate with this fingerprint holds a connection
    /// open and was heard from on it within ``recent`` milliseconds.
    package func isConnected(_ fingerprint: String) async -> Bool {
        let channels = connections.withLock { Array(($0[fingerprint] ?? [:]).values) }
        for channel in channels {
            guard let info = try? await (channel as? any SocketOptionProvider)?.getTCPInfo().get() else { continue }
            if min(info.tcpi_last_ack_recv, info.tcpi_last_data_recv) < Self.recent { return true }
        }
        return false
    }

    func opened(_ fingerprint: String, _ channel: any Channel) {
        connections.withLock { $0[fingerprint, default: [:]][ObjectIdentifier(channel)] = channel }
    }

    func closed(_ fingerprint: String, _ channel: any Channel) {
        connections.withLock { connections in
            connections[fingerprint]?[ObjectIdentifier(channel)] = nil
            if connections[fingerprint]?.isEmpty == true { connections[fingerprint] = nil }
        }
    }
}
