import Foundation
import HTTPTypes
import Hummingbird
import SyncNodeStore

/// A peer a node admitted because it redeemed an invitation.
public struct AdmittedPeer: Sendable, Equatable {
    /// Its certificate's fingerprint, now trusted.
    public let fingerprint: String
    /// The UUID it gave.
    public let uuid: String?
    /// The name it gave (at most 63 bytes).
    public let name: String?
    /// The address it connected from.
    public let address: String
    /// The port it said its own listener has; nil when it serves none.
    public let port: Int?
    /// The invitation it redeemed.
    public let invitation: Invitation
}

/// `POST /_node/redeem` `{"token", "uuid", "name", "port"}`: a peer presenting its client
/// certificate redeems an invitation and is trusted by that certificate with the invitation's
/// scope. Asked before any sign-in: the token and the certificate are the credentials.
/// Every refusal is a 401 with the reason and changes nothing; failed tokens count against the
/// address's login limit, as wrong passwords do.
struct InvitationRedemption: Sendable {
    let invitations: InvitationStore
    /// Nil: this node admits no one by certificate (anonymous, or plain HTTP).
    let trust: TrustStore?
    let uuid: String
    let name: String?
    let rateLimiter: AuthRateLimiter
    let audit: AuditLog
    let onAdmitted: (@Sendable (AdmittedPeer) -> Void)?

    static let path = "/_node/redeem"

    func redeem(_ request: Request, context: ListenerContext) async throws -> Response {
        guard let trust else {
            throw CouchError(status: 404, error: "not_found", reason: "This node admits no peers by certificate (it serves without authentication or without TLS): nothing to redeem.")
        }
        let address = context.remoteAddress
        let wait = rateLimiter.delay(address: address, user: Self.limiterKey)
        if wait > .zero { try await Task.sleep(for: wait) }
        let body = try await request.jsonObject(limit: 16 * 1024)
        guard case .string(let token)? = body["token"], !token.isEmpty else {
            throw CouchError.badRequest("expected {\"token\": INVITATION_TOKEN, \"uuid\": YOUR_NODE_UUID}")
        }
        let peerUUID = body["uuid"]?.stringValue.flatMap { UUID(uuidString: $0) != nil ? $0.lowercased() : nil }
        let peerName = body["name"]?.stringValue.map(Self.shortName)
        var port: Int?
        if case .int(let p)? = body["port"], (1...65535).contains(p) { port = Int(p) }
        guard let fingerprint = await context.clientFingerprint() else {
            refuse(address: address, fingerprint: nil, reason: "no client certificate")
            throw CouchError(status: 401, error: "unauthorized", reason: "Redeeming an invitation needs a client certificate: the node's own, which it will be trusted by (syncnode pair presents it).")
        }
        // A UUID names one peer: another certificate may not take it over (its name, its
        // `_security` grants, the replications keyed on it), nor this node's own.
        if let peerUUID, peerUUID == uuid.lowercased() || trust.fingerprint(uuid: peerUUID).map({ $0 != fingerprint }) == true {
            refuse(address: address, fingerprint: fingerprint, reason: "uuid \(peerUUID) belongs to another certificate")
            throw CouchError(status: 401, error: "unauthorized", reason: "Invitation refused: uuid \(peerUUID) is already trusted with another certificate here; its operator must remove that one first.")
        }
        let redemption: InvitationStore.Redemption
        do {
            redemption = try invitations.redeem(token: token, fingerprint: fingerprint) { trust.peer(clientFingerprint: $0) != nil }
        } catch let refusal as InvitationRefusal {
            refuse(address: address, fingerprint: fingerprint, reason: refusal.description)
            throw CouchError(status: 401, error: "unauthorized", reason: "Invitation refused: \(refusal.description).")
        }
        rateLimiter.recordSuccess(address: address, user: Self.limiterKey)
        let invitation: Invitation
        switch redemption {
        case .again(let again):
            invitation = again
        case .admitted(let admitted):
            invitation = admitted
            let who = peerName.map { "\($0) " } ?? ""
            try trust.add(fingerprint: fingerprint, uuid: peerUUID, note: "\(who)redeemed invitation \(admitted.id) from \(address)",
                          scope: admitted.scope, invitation: admitted.id)
            // Revoked between the use being taken and the trust written: the revocation, which
            // looked for this peer before it was trusted, wins.
            if try invitations.list().first(where: { $0.id == admitted.id })?.revoked != false {
                _ = try trust.remove(fingerprint: fingerprint)
                refuse(address: address, fingerprint: fingerprint, reason: InvitationRefusal.revoked.description)
                throw CouchError(status: 401, error: "unauthorized", reason: "Invitation refused: \(InvitationRefusal.revoked.description).")
            }
            audit.record(.invitationRedeemed, "invitation \(admitted.id) redeemed by \(who)\(fingerprint) from \(address): trusted with \(admitted.scope)", [
                "invitation": admitted.id, "fingerprint": fingerprint, "address": address, "peer": peerName ?? "", "scope": admitted.scope.description,
            ])
            onAdmitted?(AdmittedPeer(fingerprint: fingerprint, uuid: peerUUID, name: peerName, address: address, port: port, invitation: admitted))
        }
        let answer: [String: DocumentValue] = [
            "ok": true, "uuid": .string(uuid), "name": name.map { .string($0) } ?? .null, "invitation": .string(invitation.id),
        ]
        return HTTP.json(.dictionary(answer.merging(invitation.scope.json) { a, _ in a }))
    }

    private static let limiterKey = "\u{0}invitation"

    /// A name a peer gave, as it may go into a log line and the trusted-peers file: no control
    /// characters, at most 63 bytes (a DNS-SD name's limit), cut between characters.
    static func shortName(_ name: String) -> String {
        var out = ""
        for character in name where !character.isNewline && !(character.asciiValue.map { $0 < 32 || $0 == 127 } ?? false) {
            guard out.utf8.count + character.utf8.count <= 63 else { break }
            out.append(character)
        }
        return out
    }

    private func refuse(address: String, fingerprint: String?, reason: String) {
        rateLimiter.recordFailure(address: address, user: Self.limiterKey)
        audit.record(.invitationRefused, "invitation refused to \(fingerprint ?? "a client without a certificate") from \(address): \(reason)", [
            "fingerprint": fingerprint ?? "", "address": address, "reason": reason,
        ])
    }
}
