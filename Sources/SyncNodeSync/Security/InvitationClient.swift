import AsyncHTTPClient
import Foundation
import NIOCore
import SyncNodeStore

/// Redeems the invitation a pairing URL carries: `POST /_node/redeem` to the inviting node,
/// over TLS pinned to its fingerprint, presenting this node's certificate. The inviting node
/// then trusts that certificate with the invitation's scope, and both sides sync by
/// certificate: no password is sent or kept.
///
/// ```swift
/// let url = try PairingURL(string: scannedText)
/// let answer = try await InvitationClient.redeem(url, identity: try directory.tlsIdentity(), uuid: directory.uuid, name: "laptop")
/// print("paired with \(answer.name ?? answer.uuid) through \(answer.host)")
/// ```
public enum InvitationClient {
    /// What the inviting node answered.
    public struct Answer: Sendable, Equatable {
        /// The host (one of the URL's ``PairingURL/hosts``) that answered.
        public let host: String
        /// The inviting node's UUID (checked against the URL's).
        public let uuid: String
        /// Its DNS-SD name, when it has one.
        public let name: String?
        /// What this node may reach there.
        public let scope: PeerScope
    }

    /// Redeems `url`'s invitation, trying each of its hosts in turn until one answers.
    /// - Parameters:
    ///   - url: a pairing URL with `invite=` and `fp=`.
    ///   - identity: the certificate to be trusted by (the node's own: the one its listener serves).
    ///   - uuid: this node's UUID, recorded with its fingerprint.
    ///   - name: this node's name, for the inviter's log.
    ///   - port: this node's listener port, so the inviter can sync with it too; nil when it serves none.
    ///   - timeout: for connecting to each host (an address where nothing answers costs this
    ///     much); a host that accepted the connection gets four times as long to answer, as a
    ///     busy node takes seconds for the TLS handshake and the redemption's writes.
    /// - Throws: ``SyncError/invalidConfiguration(_:)`` when the URL has no invitation or fingerprint;
    ///   `CouchError` with the node's refusal (401 with a reason: expired, used, revoked, unknown);
    ///   ``SyncError/invalidIdentity(_:)`` when the node that answers has another UUID than the URL's;
    ///   ``SyncError/connectionFailed(_:)`` naming every host tried and why when none is the node
    ///   (no answer, or a certificate other than the pinned one).
    public static func redeem(_ url: PairingURL, identity: TLSIdentity, uuid: String, name: String?, port: Int? = nil,
                              timeout: Duration = .seconds(5)) async throws -> Answer {
        guard let token = url.invitation else {
            throw SyncError.invalidConfiguration("the pairing URL carries no invitation (invite=): make one with `syncnode invite` on the other node")
        }
        guard let fingerprint = url.fingerprint, url.url.scheme?.lowercased() == "https" else {
            throw SyncError.invalidConfiguration("the pairing URL has no certificate fingerprint (fp=): only an HTTPS node can be paired with")
        }
        var body: [String: DocumentValue] = ["token": .string(token), "uuid": .string(uuid)]
        if let name { body["name"] = .string(name) }
        if let port { body["port"] = .int(Int64(port)) }
        var failures: [String] = []
        for host in url.hosts {
            let client: HTTPClient
            do {
                (client, _) = try await PeerClient.make(
                    scheme: "https", host: host, port: url.port, pinnedFingerprint: fingerprint, clientIdentity: identity, connectTimeout: timeout)
            } catch {
                // Another machine at that address (a certificate that is not the pinned one) is
                // as much a miss as no answer: the next address may be the node.
                failures.append("\(host): \(error)")
                continue
            }
            defer { _ = client.shutdown() }
            var request = HTTPClientRequest(url: WireURL.root(scheme: "https", host: host, port: url.port) + "/_node/redeem")
            request.method = .POST
            request.headers.add(name: "Content-Type", value: "application/json")
            request.headers.add(name: "Accept", value: "application/json")
            request.body = .bytes(ByteBuffer(string: DocumentValue.dictionary(body).toJSON()))
            let response: HTTPClientResponse
            let text: String
            do {
                response = try await client.execute(request, timeout: .init(timeout * 4))
                text = String(buffer: try await response.body.collect(upTo: 1 << 20))
            } catch {
                failures.append("\(host): \(error)")
                continue
            }
            let answer = try? DocumentValue(json: text)
            guard response.status == .ok else {
                throw CouchError(
                    status: Int(response.status.code), error: answer?["error"]?.stringValue ?? "refused",
                    reason: answer?["reason"]?.stringValue ?? "the node answered \(response.status.code) to the invitation")
            }
            guard case .string(let answeredUUID)? = answer?["uuid"], answeredUUID == url.uuid else {
                throw SyncError.invalidIdentity("\(host):\(url.port) answered as another node than the pairing URL's \(url.uuid)")
            }
            var keyspaces: [Keyspace]?
            if case .array(let names)? = answer?["keyspaces"] { keyspaces = names.compactMap { $0.stringValue.flatMap(Keyspace.init) } }
            let access = answer?["access"]?.stringValue.flatMap(PeerScope.Access.init(rawValue:)) ?? .write
            return Answer(host: host, uuid: answeredUUID, name: answer?["name"]?.stringValue, scope: PeerScope(keyspaces: keyspaces, access: access))
        }
        throw SyncError.connectionFailed("no address of the pairing URL answered: " + failures.joined(separator: "; "))
    }
}
