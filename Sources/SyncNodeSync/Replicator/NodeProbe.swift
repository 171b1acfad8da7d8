import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import SyncNodeStore

/// Asks a node who it is: one `GET /` over a connection whose certificate is
/// checked against the fingerprint the node claims. Discovery uses it to
/// confirm that an advertised peer really answers at its address.
public enum NodeProbe {
    /// What a probe learnt.
    public enum Answer: Sendable, Equatable {
        /// `GET /` answered with this `uuid`.
        case uuid(String)
        /// The node wants credentials that were missing or refused (it answered, over TLS with the expected certificate when one was given).
        case unauthorized
    }

    /// Probes the node whose root is `scheme://host:port`.
    /// - parameter fingerprint: the certificate fingerprint to pin (https only).
    /// - throws: connection failures, ``SyncError/invalidIdentity(_:)`` for another certificate, ``CouchError`` for another answer.
    public static func identify(scheme: String, host: String, port: Int, fingerprint: String?, authenticator: BasicAuthenticator?,
                                timeout: Duration) async throws -> Answer {
        let (client, _) = try await HTTPRemote.makeClient(scheme: scheme, host: host, port: port, pinnedFingerprint: fingerprint, connectTimeout: timeout)
        do {
            let answer = try await identify(client, root: "\(scheme)://\(host.contains(":") ? "[\(host)]" : host):\(port)",
                                            authenticator: authenticator, timeout: timeout)
            try? await client.shutdown()
            return answer
        } catch {
            try? await client.shutdown()
            throw error
        }
    }

    private static func identify(_ client: HTTPClient, root: String, authenticator: BasicAuthenticator?, timeout: Duration) async throws -> Answer {
        var request = HTTPClientRequest(url: root + "/")
        request.headers.add(name: "Accept", value: "application/json")
        if let auth = authenticator {
            request.headers.add(name: "Authorization", value: "Basic " + Data("\(auth.username):\(auth.password)".utf8).base64EncodedString())
        }
        let response = try await client.execute(request, timeout: .init(timeout))
        let body = try await response.body.collect(upTo: 1 << 20)
        if response.status == .unauthorized { return .unauthorized }
        guard response.status == .ok, case .dictionary(let info)? = try? DocumentValue(json: String(buffer: body)),
              case .string(let uuid)? = info["uuid"] else {
            throw CouchError(status: Int(response.status.code), error: "not_a_node", reason: "GET \(root)/ did not answer with a node uuid")
        }
        return .uuid(uuid)
    }
}
