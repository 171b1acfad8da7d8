import Foundation
import Synchronization
import SyncNodeDiscovery
import SyncNodeStore
import SyncNodeSync

/// A mesh node as its listener's ``NodeConsole``: its name, pairing URL and QR code, its peers,
/// and trust changes applied to them at once (the dashboard's Node and Peers pages).
final class MeshConsole: NodeConsole {
    private let configuration: MeshConfiguration
    private let board: PresenceBoard
    private let replications: PeerReplications
    private let pairing = Mutex<(url: String, qr: String?)?>(nil)
    private let pairer: @Sendable (PairingURL) async throws -> Void
    private let inviter: @Sendable (PeerScope, Duration, Int?, String) async throws -> (invitation: Invitation, url: PairingURL)
    private let revoker: @Sendable (String) async throws -> Invitation?

    init(configuration: MeshConfiguration, board: PresenceBoard, replications: PeerReplications,
         pair: @escaping @Sendable (PairingURL) async throws -> Void,
         invite: @escaping @Sendable (PeerScope, Duration, Int?, String) async throws -> (invitation: Invitation, url: PairingURL),
         revoke: @escaping @Sendable (String) async throws -> Invitation?) {
        self.configuration = configuration
        self.board = board
        self.replications = replications
        pairer = pair
        inviter = invite
        revoker = revoke
    }

    /// The node started with this pairing URL (nil: it stopped).
    func started(_ url: PairingURL?) {
        let text = url?.url.absoluteString
        pairing.withLock { $0 = text.map { ($0, try? QRCode($0).svg()) } }
    }

    var name: String { configuration.name }
    var pairingURL: String? { pairing.withLock { $0?.url } }
    var pairingQRCode: String? { pairing.withLock { $0?.qr } }
    /// The board's peers, each trusted one with its scope and how it was admitted (`admitted`:
    /// the invitation it redeemed, or the note kept when it was trusted otherwise).
    var peers: DocumentValue {
        guard case .array(let listed) = board.json else { return board.json }
        let entries = (try? configuration.trust.entries().filter { !$0.revoked }) ?? []
        return .array(listed.map { peer in
            guard case .dictionary(var fields) = peer, let fingerprint = fields["fingerprint"]?.stringValue,
                  let entry = entries.last(where: { $0.fingerprint == fingerprint }) else { return peer }
            fields["scope"] = .string(entry.scope.description)
            fields["admitted"] = .string(entry.invitation.map { "invitation \($0)" } ?? (entry.note.isEmpty ? "trusted by fingerprint" : entry.note))
            return .dictionary(fields)
        })
    }

    func qrCode(_ text: String) -> String? { try? QRCode(text).svg() }

    func pair(with url: PairingURL) async throws { try await pairer(url) }

    func trust(fingerprint: String) async throws {
        try configuration.trust.add(fingerprint: fingerprint, note: "trusted from the dashboard")
        await replications.trustChanged(fingerprint: fingerprint)
    }

    func untrust(fingerprint: String) async throws -> Bool {
        guard try configuration.trust.remove(fingerprint: fingerprint) else { return false }
        await replications.trustChanged(fingerprint: fingerprint)
        return true
    }

    func invite(scope: PeerScope, lifetime: Duration, uses: Int?, note: String) async throws -> (invitation: Invitation, url: PairingURL) {
        try await inviter(scope, lifetime, uses, note)
    }

    func revokeInvitation(id: String) async throws -> Invitation? { try await revoker(id) }
}
