import SyncNodeStore

/// What a node tells and lets its administrators do beyond CouchDB's API: its name, pairing
/// URL, peers and trust, served to server admins at `/_node/...` (the dashboard's data).
///
/// A ``Listener`` serves databases; the object that runs the node around it (a mesh node) knows
/// the rest and hands it over as ``ListenerEnvironment/console``.
public protocol NodeConsole: Sendable {
    /// The node's name (its DNS-SD instance name).
    var name: String { get }
    /// The URL peers pair with (an invitation, never a password); nil before the node has started.
    var pairingURL: String? { get }
    /// The pairing URL as an SVG QR code; nil before the node has started.
    var pairingQRCode: String? { get }
    /// The peers, as a JSON array (`GET /_node/peers`).
    var peers: DocumentValue { get }
    /// Pairs with the node a pairing URL names (its fingerprint trusted, its URL kept, its
    /// keyspaces synced), as a peer DNS-SD cannot see.
    /// - Throws: when the URL has no fingerprint or cannot be saved.
    func pair(with url: PairingURL) async throws
    /// Trusts the certificate `fingerprint`: the peer presenting it syncs and signs in by it.
    /// - Throws: when the trust file cannot be written.
    func trust(fingerprint: String) async throws
    /// Withdraws trust in `fingerprint` and stops syncing with its peer; false when it was not trusted.
    /// - Throws: when the trust file cannot be written.
    func untrust(fingerprint: String) async throws -> Bool
    /// Makes an invitation; returns it and the pairing URL that carries its token.
    /// - Throws: when the node is not started, or the invitation is invalid or cannot be saved.
    func invite(scope: PeerScope, lifetime: Duration, uses: Int?, note: String) async throws -> (invitation: Invitation, url: PairingURL)
    /// `text` as an SVG QR code; nil when it does not fit in one.
    func qrCode(_ text: String) -> String?
    /// Revokes invitation `id` and untrusts the peers that redeemed it; nil when there is none.
    /// - Throws: when the files cannot be written.
    func revokeInvitation(id: String) async throws -> Invitation?
}
