import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL
import Testing
@testable import SyncNodeStore
@testable import SyncNodeSync

/// Peers sign in with their node's TLS identity (mutual TLS), as Syncthing devices do: a trusted
/// certificate is admitted without a password, an unknown or removed one is not.
@Suite struct PeerCertificateTests {
    /// A node identity of its own, in a fresh directory.
    static func identity() throws -> (TLSIdentity, URL) {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("syncnode-peer-\(UUID().uuidString)")
        return (try NodeDirectory(url: directory).tlsIdentity(), directory)
    }

    /// A client of the harness's node that presents `identity` (or no certificate).
    /// Runs `body` with a client of `h` presenting a new peer certificate; then shuts both down.
    static func withPeerClient(of h: ListenerHarness, _ body: (HTTPClient, TLSIdentity) async throws -> Void) async throws {
        let (peer, peerDir) = try identity()
        defer { try? FileManager.default.removeItem(at: peerDir) }
        let client = try client(of: h, presenting: peer)
        try await withCleanup({
            try? await client.shutdown()
            await h.shutdown()
        }) { try await body(client, peer) }
    }

    static func client(of h: ListenerHarness, presenting identity: TLSIdentity?) throws -> HTTPClient {
        var tls = try h.node.tlsIdentity().pinningClientConfiguration()
        try identity?.presentAsClient(in: &tls)
        return HTTPClient(eventLoopGroup: MultiThreadedEventLoopGroup.singleton, configuration: .init(tlsConfiguration: tls))
    }

    static func send(_ client: HTTPClient, _ h: ListenerHarness, _ method: HTTPMethod, _ path: String, auth: String? = nil,
                     body: String? = nil) async throws -> (Int, String) {
        var request = HTTPClientRequest(url: h.base + path)
        request.method = method
        if let auth { request.headers.add(name: "Authorization", value: auth) }
        if method != .GET {
            request.headers.add(name: "Content-Type", value: "application/json")
            request.body = .bytes(ByteBuffer(string: body ?? (method == .POST && path.hasSuffix("_bulk_docs") ? #"{"docs":[]}"# : "{}")))
        }
        let response = try await client.execute(request, timeout: .seconds(30))
        return (Int(response.status.code), String(buffer: try await response.body.collect(upTo: 1 << 20)))
    }

    /// A peer that holds a connection open is counted as connected, by its certificate, while
    /// TCP keep-alive hears from it, and not once the connection closes.
    @Test func aPeerIsConnectedWhileItHoldsAConnection() async throws {
        let (peer, peerDir) = try Self.identity()
        defer { try? FileManager.default.removeItem(at: peerDir) }
        let h = try await ListenerHarness(peerTrust: (trusted: [peer.fingerprint], firstUse: false))
        let client = try Self.client(of: h, presenting: peer)
        try await withCleanup({
            try? await client.shutdown()
            await h.shutdown()
        }) {
            let connected = h.listener.connectedPeers
            #expect(await !connected.isConnected(peer.fingerprint))
            let (status, _) = try await Self.send(client, h, .GET, "/")
            #expect(status == 200)
            // The client keeps its connection for the next request.
            #expect(await connected.isConnected(peer.fingerprint))
            #expect(await !connected.isConnected(try h.node.tlsIdentity().fingerprint))
            // Quiet for longer than counts as recent: the kernel's keep-alive was heard meanwhile.
            try await Task.sleep(for: .milliseconds(ConnectedPeers.recent + 1500))
            #expect(await connected.isConnected(peer.fingerprint))
            try await client.shutdown()
            var gone = false, looks = 0
            while !gone, looks < 500 {
                gone = await !connected.isConnected(peer.fingerprint)
                looks += 1
                if !gone { try await Task.sleep(for: .milliseconds(20)) }
            }
            #expect(gone)
        }
    }

    @Test func everyEndpointAdmitsTrustedCertificatesOnly() async throws {
        let (trusted, trustedDir) = try Self.identity()
        let (stranger, strangerDir) = try Self.identity()
        let (revoked, revokedDir) = try Self.identity()
        defer { for d in [trustedDir, strangerDir, revokedDir] { try? FileManager.default.removeItem(at: d) } }
        let asked = Collector<String>()
        let h = try await ListenerHarness(authFailuresPerMinute: 1000, peerTrust: (trusted: [trusted.fingerprint], firstUse: false),
                                          onUntrustedPeer: { fingerprint, _ in asked.append(fingerprint) })
        let clients = try [trusted, stranger, revoked].map { try Self.client(of: h, presenting: $0) } + [try Self.client(of: h, presenting: nil)]
        try await withCleanup({
            for c in clients { try? await c.shutdown() }
            await h.shutdown()
        }) {
            try TrustStore(directory: h.node).add(fingerprint: revoked.fingerprint, note: "to be removed")
            _ = try await h.request(.PUT, "/db")
            _ = try await h.request(.PUT, "/db/x", body: "{}")
            let endpoints: [(HTTPMethod, String)] = [
                (.GET, "/"), (.GET, "/_all_dbs"), (.GET, "/db"), (.GET, "/db/x"), (.PUT, "/db/y"), (.GET, "/db/_changes"),
                (.POST, "/db/_bulk_docs"), (.POST, "/db/_revs_diff"), (.GET, "/db/_local/x"), (.POST, "/db/_all_docs"),
                (.GET, "/_session"),
            ]
            let wrong = "Basic " + Data("\(ListenerHarness.user):wrong".utf8).base64EncodedString()
            for (method, path) in endpoints {
                for (name, client) in zip(["trusted", "revoked (still trusted)"], [clients[0], clients[2]]) {
                    let (status, body) = try await Self.send(client, h, method, path)
                    #expect(status != 401 && status < 500, "\(name): \(method) \(path) -> \(status) \(body)")
                }
                let (status, body) = try await Self.send(clients[1], h, method, path)
                if path == "/_session" {
                    #expect(status == 200 && body.contains(#""name":null"#), "unknown certificate: \(body)")
                } else {
                    #expect(status == 401 && body.contains("does not trust certificate \(stranger.fingerprint)"), "\(method) \(path): \(status) \(body)")
                }
                if path != "/_session" {
                    #expect(try await Self.send(clients[3], h, method, path).0 == 401, "no certificate: \(method) \(path)")
                }
                // A wrong password is wrong, whatever certificate comes with it.
                #expect(try await Self.send(clients[0], h, method, path, auth: wrong).0 == 401, "trusted + wrong password: \(method) \(path)")
                // People still sign in with a password, certificate or not.
                #expect(try await Self.send(clients[1], h, method, path, auth: ListenerHarness.authorization).0 != 401)
            }
            let session = try await Self.send(clients[0], h, .GET, "/_session").1
            #expect(session.contains(#""authenticated":"certificate""#) && session.contains(#""name":"peer:"#))
            #expect(asked.values.allSatisfy { $0 == stranger.fingerprint } && !asked.values.isEmpty)

            // Removed from the file: refused from the next request on, with no restart.
            #expect(try TrustStore(directory: h.node).remove(fingerprint: revoked.fingerprint))
            for (method, path) in endpoints where path != "/_session" {
                #expect(try await Self.send(clients[2], h, method, path).0 == 401, "revoked: \(method) \(path)")
            }
            #expect(try await Self.send(clients[0], h, .GET, "/db").0 == 200)
            // The refused writes changed nothing.
            #expect(try await h.request(.GET, "/db")["doc_count"] == 2)
        }
    }

    /// Trust on first use binds to peers found through discovery, never to a certificate that merely
    /// connects; a removed peer stays out even then.
    @Test func trustOnFirstUseAdmitsDiscoveredPeersOnlyAndRevocationSticks() async throws {
        let (first, firstDir) = try Self.identity()
        defer { try? FileManager.default.removeItem(at: firstDir) }
        let h = try await ListenerHarness(peerTrust: (trusted: [], firstUse: true))
        let client = try Self.client(of: h, presenting: first)
        try await withCleanup({
            try? await client.shutdown()
            await h.shutdown()
        }) {
            #expect(try await Self.send(client, h, .GET, "/_all_dbs").0 == 401)
            let store = try TrustStore(directory: h.node, trustOnFirstUse: true)
            let uuid = UUID().uuidString.lowercased()
            // Malformed announcements are neither trusted nor written down.
            #expect(!store.admit(fingerprint: "not a fingerprint", uuid: uuid, name: "x"))
            #expect(!store.admit(fingerprint: first.fingerprint, uuid: "bad\nuuid", name: "x"))
            #expect(try store.entries().isEmpty)
            // Discovered (its certificate matched what it announced): trusted, recorded, and admitted as a client.
            #expect(store.admit(fingerprint: first.fingerprint, uuid: uuid, name: "laptop"))
            #expect(try store.entries().map(\.fingerprint) == [first.fingerprint])
            let (status, body) = try await Self.send(client, h, .GET, "/_session")
            #expect(status == 200 && body.contains("peer:\(uuid)"))
            // Removed: refused at once, and not trusted on first use again.
            #expect(try store.remove(fingerprint: first.fingerprint))
            #expect(try await Self.send(client, h, .GET, "/_all_dbs").0 == 401)
            #expect(!store.admit(fingerprint: first.fingerprint, uuid: uuid, name: "laptop"))
            #expect(store.refusal(fingerprint: first.fingerprint, uuid: uuid).contains("removed"))
            // Added by hand again: trusted again.
            try store.add(fingerprint: first.fingerprint, uuid: uuid)
            #expect(try await Self.send(client, h, .GET, "/_all_dbs").0 == 200)
        }
    }

    /// A peer node whose certificate the harness's listener trusts, for `body`; both are cleaned up after.
    static func withTrustedPeer(_ body: (ListenerHarness, NodeDirectory, TLSIdentity) async throws -> Void) async throws {
        let peerDirectory = FileManager.default.temporaryDirectory.appendingPathComponent("syncnode-peer-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: peerDirectory) }
        let peer = try NodeDirectory(url: peerDirectory)
        let identity = try peer.tlsIdentity()
        let h = try await ListenerHarness(peerTrust: (trusted: [identity.fingerprint], firstUse: false))
        try await withCleanup({
            peer.closeAll()
            await h.shutdown()
        }) {
            try await body(h, peer, identity)
        }
    }

    /// A node's replicator signs in to a peer that trusts it with its certificate alone.
    @Test func aReplicatorSignsInWithItsNodeIdentity() async throws {
        try await Self.withTrustedPeer { h, peer, identity in
            _ = try await h.request(.PUT, "/db")
            _ = try await h.request(.PUT, "/db/a", body: #"{"v":1}"#)
            let collection = try #require(try peer.database("db", create: true)).defaultCollection()
            let url = try #require(URL(string: "\(h.base)/db?fp=\(try h.node.tlsIdentity().fingerprint)"))
            var config = ReplicatorConfiguration(collection: collection, target: .url(url))
            config.clientIdentity = identity
            let replicator = Replicator(config: config)
            replicator.start()
            await replicator.waitUntilStopped()
            #expect(replicator.status.error == nil)
            #expect(try collection.document(id: "a")?.int(forKey: "v") == 1)

            // Without its certificate, the same replicator is refused.
            config.clientIdentity = nil
            let refused = Replicator(config: config)
            refused.start()
            await refused.waitUntilStopped()
            #expect("\(String(describing: refused.status.error))".contains("401"))
        }
    }
}
