import Synchronization

/// The peers connected to a listener now, by the fingerprint of the certificate they presented:
/// a peer that holds a connection open (a long poll, a pooled keep-alive connection) is there.
///
/// The listener's connections are kept alive by TCP (``PeerPresenceHandler``): the kernel asks a
/// quiet peer every second and closes the connection when two asks go unanswered, so a peer
/// that vanishes leaves this list within a few seconds, at no cost to either side's process.
/// Discovery then need not ask a connected peer `GET /` every few seconds itself (in a mesh of
/// twenty, those checks were most of an idle node's requests).
package final class ConnectedPeers: Sendable {
    private let counts = Mutex<[String: Int]>([:])

    package init() {}

    /// Whether a client that presented the certificate with this fingerprint holds a connection open.
    package func isConnected(_ fingerprint: String) -> Bool {
        counts.withLock { ($0[fingerprint] ?? 0) > 0 }
    }

    func opened(_ fingerprint: String) {
        counts.withLock { $0[fingerprint, default: 0] += 1 }
    }

    func closed(_ fingerprint: String) {
        counts.withLock { counts in
            guard let count = counts[fingerprint] else { return }
            counts[fingerprint] = count > 1 ? count - 1 : nil
        }
    }
}
