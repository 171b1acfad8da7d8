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

    init(configuration: MeshConfiguration, board: PresenceBoard, replications: PeerReplications,
         pair: @escaping @Sendable (PairingURL) async throws -> Void) {
        self.configuration = configuration
        self.board = board
        self.replications = replications
        pairer = pair
    }

    /// The node started with this pairing URL (nil: it stopped).
    func started(_ url: PairingURL?) {
        let text = url?.url.absoluteString
        pairing.withLock { $0 = text.map { ($0, try? QRCode($0).svg()) } }
    }

    var name: String { configuration.name }
    var pairingURL: String? { pairing.withLock { $0?.url } }
    var pairingQRCode: String? { pairing.withLock { $0?.qr } }
    var peers: DocumentValue { board.json }

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
}
