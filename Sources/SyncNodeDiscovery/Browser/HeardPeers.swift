import Synchronization

/// When each peer (by UUID) was last heard from over a connection of the node's own: a
/// replication's long poll that asks the peer for heartbeats
/// (`ReplicatorConfiguration.longPollHeartbeat`). A ``Browser`` given one does not probe a
/// peer heard from within ``window``: the connection already shows it is there.
///
/// In a mesh of ten, the browser's probes were over half the requests an idle node made and
/// answered; a heartbeat is one byte on a connection that is open anyway.
public final class HeardPeers: Sendable {
    /// How often a replication should ask its peer for a heartbeat.
    public static let heartbeat: Duration = .seconds(2)
    /// How recent a hearing must be to stand in for a probe. A peer that vanishes is probed
    /// again this long after its last heartbeat.
    public let window: Duration

    private let last = Mutex<[String: ContinuousClock.Instant]>([:])

    /// - parameter window: how recent a hearing must be to stand in for a probe; by default a
    ///   heartbeat with a second to spare, so a vanished peer is reported gone about as soon as
    ///   without heartbeats.
    public init(window: Duration = HeardPeers.heartbeat + .seconds(1)) {
        self.window = window
    }

    /// The peer with `uuid` was heard from just now.
    public func heard(_ uuid: String) {
        last.withLock { $0[uuid] = .now }
    }

    /// How long ago the peer with `uuid` was last heard from, if ever.
    func silence(of uuid: String) -> Duration? {
        last.withLock { $0[uuid] }.map { $0.duration(to: .now) }
    }
}
