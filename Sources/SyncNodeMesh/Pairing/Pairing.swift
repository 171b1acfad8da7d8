import Foundation
import SyncNodeSync

/// Pairing by URL, as ``MeshNode/pair(with:)`` and `syncnode pair` do it: redeem the URL's
/// invitation (if it carries one), trust the other node's certificate, and keep the URL so the
/// node syncs with it (now, or from its next start).
public enum Pairing {
    /// Records a pairing with the node `url` names, in `directory`.
    /// - Parameters:
    ///   - url: a pairing URL with `fp=` (and `invite=` to be trusted there).
    ///   - directory: this node's data directory, where the URL is kept.
    ///   - trust: the trusted peers of `directory`.
    ///   - name: this node's name, for the other node's log.
    ///   - port: this node's listener port, so the other node syncs with it too; nil when none runs.
    ///   - clientIdentity: the certificate to be trusted by (the node's own).
    /// - Returns: the URL kept (without its invitation, naming the address that answered).
    /// - Throws: `SyncError/invalidConfiguration(_:)` for a URL without a fingerprint, an invitation
    ///   without a client identity, or files that cannot be written; what
    ///   `InvitationClient/redeem(_:identity:uuid:name:port:timeout:)` throws.
    public static func record(_ url: PairingURL, directory: NodeDirectory, trust: TrustStore, name: String, port: Int?,
                              clientIdentity: TLSIdentity?) async throws -> PairingURL {
        guard let fingerprint = url.fingerprint else {
            throw SyncError.invalidConfiguration("the pairing URL has no certificate fingerprint (fp=): only an HTTPS node can be paired with")
        }
        var kept = url
        if url.invitation != nil {
            guard let clientIdentity else {
                throw SyncError.invalidConfiguration("this node serves plain HTTP: it has no certificate to be trusted by")
            }
            let answer = try await InvitationClient.redeem(url, identity: clientIdentity, uuid: directory.uuid, name: name, port: port)
            kept = url.withoutInvitation(host: answer.host)
        }
        try trust.add(fingerprint: fingerprint, uuid: url.uuid, note: "paired \(kept.host):\(kept.port)")
        try directory.pairedPeers.save(kept)
        return kept
    }
}
