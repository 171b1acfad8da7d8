import Foundation
import Logging
import SyncNodeSync

/// Finds SyncNode peers on the local network through avahi-daemon.
///
/// DNS-SD is only a hint: a peer is reported once it answers `GET /` with the
/// UUID it advertises (over TLS with the certificate it advertises), and
/// reported gone when it withdraws its service or stops answering.
/// Peers are deduplicated by UUID across interfaces and address families;
/// the node itself (`ignoring`) is never reported.
///
/// ```swift
/// let browser = try Browser(ignoring: node.uuid, authenticator: BasicAuthenticator(username: "ann", password: "secret"))
/// browser.start()
/// for await event in browser.events {
///     if case .appeared(let peer) = event { print(peer.name, peer.url(database: "default")) }
/// }
/// ```
public final class Browser: Sendable {
    /// Peer events, in order. Iterate it from one task only.
    public let events: AsyncStream<PeerEvent>
    private let continuation: AsyncStream<PeerEvent>.Continuation
    private let services: ServiceBrowser
    private let tracker: PeerTracker
    private let feeder: Task<Void, Never>
    private let sightings: AsyncStream<SightingEvent>.Continuation

    /// - parameters:
    ///   - ownUUID: this node's UUID, never reported.
    ///   - authenticator: credentials for peers' `GET /`; without them (or when refused), a peer that answers 401
    ///     over TLS with its advertised certificate still counts as answering.
    ///   - probeInterval: how often each peer is checked; two failed checks in a row report it gone.
    ///   - probeTimeout: how long one check may take before it counts as failed.
    ///   - isConnected: whether a peer that presented the certificate with this fingerprint holds a
    ///     connection to this node and was heard from on it in the last seconds (a mesh node's
    ///     listener tells). A settled peer so connected is not checked: it is looked at each
    ///     second, and checked again as soon as it is not.
    ///   - logger: where sightings, probes and losses are logged.
    ///   - onStatus: told (on Avahi's thread; return quickly) when DNS-SD becomes available or unavailable.
    public init(ignoring ownUUID: String? = nil, authenticator: BasicAuthenticator? = nil, probeInterval: Duration = .seconds(2),
                probeTimeout: Duration = .milliseconds(1500), isConnected: (@Sendable (_ fingerprint: String) async -> Bool)? = nil,
                logger: Logger = Logger(label: "syncnode.browser"),
                onStatus: @escaping @Sendable (DiscoveryStatus) -> Void = { _ in }) throws {
        let (events, continuation) = AsyncStream.makeStream(of: PeerEvent.self)
        self.events = events
        self.continuation = continuation
        let tracker = PeerTracker(
            options: .init(ownUUID: ownUUID, authenticator: authenticator, probeInterval: probeInterval, probeTimeout: probeTimeout, failureLimit: 2,
                          isConnected: isConnected),
            logger: logger, emit: { continuation.yield($0) })
        self.tracker = tracker
        let (stream, sightings) = AsyncStream.makeStream(of: SightingEvent.self)
        self.sightings = sightings
        services = try ServiceBrowser(logger: logger, onStatus: onStatus, emit: { sightings.yield($0) })
        feeder = Task {
            for await event in stream { await tracker.handle(event) }
        }
    }

    /// Starts browsing (now, or when the daemon appears).
    public func start() { services.start() }

    /// Stops browsing and probing; ends ``events``.
    public func stop() async {
        services.stop()
        sightings.finish()
        await feeder.value
        await tracker.stop()
        continuation.finish()
    }

    /// The peers that answer now.
    public func peers() async -> [Peer] { await tracker.peers }
}
