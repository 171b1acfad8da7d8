import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import Testing
@testable import SyncNodeStore
@testable import SyncNodeSync

/// Per-database access through `_security`: admins, members (writers) and readers, by name or
/// role, for users and for peers signed in by certificate.
@Suite struct DatabaseAccessTests {
    static func basic(_ user: String, _ password: String) -> String {
        "Basic " + Data("\(user):\(password)".utf8).base64EncodedString()
    }

    /// `ann` is a server admin (the harness's user); the rest have roles only.
    static let authenticator: ListenerAuthenticator = {
        let users = ["ann": (ListenerHarness.password, ["_admin"]), "dba": ("pw", ["ops"]), "wendy": ("pw", []),
                     "rita": ("pw", ["auditors"]), "olga": ("pw", [])]
        return ListenerAuthenticator({ user, password in users[user]?.0 == password },
                                     sessionKey: { user in users[user].map { Array($0.0.utf8) } },
                                     roles: { user in users[user]?.1 ?? [] })
    }()

    /// A request and the access it needs.
    struct Endpoint {
        let method: HTTPMethod
        let path: String
        let body: String?
        let needs: String  // reader, writer, admin, server
    }

    static let endpoints: [Endpoint] = [
        Endpoint(method: .GET, path: "/db", body: nil, needs: "reader"),
        Endpoint(method: .GET, path: "/db/doc", body: nil, needs: "reader"),
        Endpoint(method: .GET, path: "/db/doc/att", body: nil, needs: "reader"),
        Endpoint(method: .GET, path: "/db/_all_docs", body: nil, needs: "reader"),
        Endpoint(method: .POST, path: "/db/_all_docs", body: #"{"keys":["doc"]}"#, needs: "reader"),
        Endpoint(method: .GET, path: "/db/_changes", body: nil, needs: "reader"),
        Endpoint(method: .POST, path: "/db/_bulk_get", body: #"{"docs":[{"id":"doc"}]}"#, needs: "reader"),
        Endpoint(method: .POST, path: "/db/_revs_diff", body: #"{"doc":["1-abc"]}"#, needs: "reader"),
        Endpoint(method: .POST, path: "/db/_find", body: #"{"selector":{}}"#, needs: "reader"),
        Endpoint(method: .GET, path: "/db/_security", body: nil, needs: "reader"),
        Endpoint(method: .GET, path: "/db/_local/checkpoint", body: nil, needs: "reader"),
        Endpoint(method: .PUT, path: "/db/_local/checkpoint", body: #"{"seq":1}"#, needs: "reader"),
        Endpoint(method: .PUT, path: "/db/new", body: #"{"v":1}"#, needs: "writer"),
        Endpoint(method: .POST, path: "/db", body: #"{"v":2}"#, needs: "writer"),
        Endpoint(method: .POST, path: "/db/_bulk_docs", body: #"{"docs":[{"v":3}]}"#, needs: "writer"),
        Endpoint(method: .POST, path: "/db/_index", body: #"{"index":{"fields":["v"]},"name":"by-v"}"#, needs: "admin"),
        Endpoint(method: .PUT, path: "/db2", body: nil, needs: "server"),
    ]

    static let rank = ["none": 0, "reader": 1, "writer": 2, "admin": 3, "server": 4]

    @Test func everyEndpointGivesEachPrincipalItsAccessOnly() async throws {
        let (peerIdentity, peerDir) = try PeerCertificateTests.identity()
        defer { try? FileManager.default.removeItem(at: peerDir) }
        let h = try await ListenerHarness(authFailuresPerMinute: 1000, peerTrust: (trusted: [peerIdentity.fingerprint], firstUse: false),
                                          authenticator: Self.authenticator)
        let peerClient = try PeerCertificateTests.client(of: h, presenting: peerIdentity)
        try await withCleanup({
            try? await peerClient.shutdown()
            await h.shutdown()
        }) {
            #expect(try await h.request(.PUT, "/db").status == 201)
            #expect(try await h.request(.PUT, "/open").status == 201)
            #expect(try await h.request(.PUT, "/db/doc/att", bytes: Array("hi".utf8), headers: [("Content-Type", "text/plain")]).status == 201)
            let security = #"{"admins":{"names":[],"roles":["ops"]},"members":{"names":["wendy"],"roles":[]},"readers":{"names":[],"roles":["auditors","peer"]}}"#
            #expect(try await h.request(.PUT, "/db/_security", body: security).status == 200)
            // Round trip.
            #expect(try await h.request(.GET, "/db/_security").json == (try DocumentValue(json: security)))

            let principals: [(name: String, level: String, auth: String?)] = [
                ("ann (server admin)", "server", ListenerHarness.authorization),
                ("dba (db admin by role)", "admin", Self.basic("dba", "pw")),
                ("wendy (member)", "writer", Self.basic("wendy", "pw")),
                ("rita (reader by role)", "reader", Self.basic("rita", "pw")),
                ("olga (not listed)", "none", Self.basic("olga", "pw")),
                ("trusted peer (reader by role)", "reader", nil),
            ]
            for principal in principals {
                for endpoint in Self.endpoints {
                    let reply: (Int, String)
                    if principal.auth == nil {
                        reply = try await PeerCertificateTests.send(peerClient, h, endpoint.method, endpoint.path, body: endpoint.body)
                    } else {
                        let r = try await h.request(endpoint.method, endpoint.path, body: endpoint.body, auth: principal.auth)
                        reply = (r.status, r.body)
                    }
                    let allowed = Self.rank[principal.level]! >= Self.rank[endpoint.needs]!
                    let what = "\(principal.name): \(endpoint.method) \(endpoint.path) -> \(reply.0) \(reply.1)"
                    if allowed {
                        #expect(![401, 403].contains(reply.0) && reply.0 < 500, "\(what)")
                    } else {
                        #expect(reply.0 == 403 && reply.1.contains(#""error":"forbidden""#), "\(what)")
                    }
                }
                // _all_dbs names only what the asker may read.
                let all: DocumentValue
                if principal.auth == nil {
                    all = try DocumentValue(json: try await PeerCertificateTests.send(peerClient, h, .GET, "/_all_dbs").1)
                } else {
                    all = try await h.request(.GET, "/_all_dbs", auth: principal.auth).json
                }
                // db2 is open: the server admin made it first.
                let expected: DocumentValue = principal.level == "none" ? ["db2", "open"] : ["db", "db2", "open"]
                #expect(all == expected, "\(principal.name): _all_dbs \(all)")
            }
            // Signed-out and wrong passwords never get past authentication.
            for endpoint in Self.endpoints {
                #expect(try await h.request(endpoint.method, endpoint.path, body: endpoint.body, auth: nil).status == 401)
                #expect(try await h.request(endpoint.method, endpoint.path, body: endpoint.body, auth: Self.basic("wendy", "wrong")).status == 401)
            }
            // A reader's refused write says why.
            let refused = try await h.request(.PUT, "/db/x", body: "{}", auth: Self.basic("rita", "pw"))
            #expect(refused.body.contains("may read 'db' but not write it"))
            // A malformed security object is refused and the stored one kept.
            #expect(try await h.request(.PUT, "/db/_security", body: #"{"members":{"names":"wendy"}}"#).status == 400)
            #expect(try await h.request(.GET, "/db/_security").json == (try DocumentValue(json: security)))
        }
    }

    /// A peer that may read but not write pulls, and its refused push is reported, not fatal.
    @Test func aReaderPeerPullsAndIsToldItMayNotPush() async throws {
        try await PeerCertificateTests.withTrustedPeer { h, peer, identity in
            _ = try await h.request(.PUT, "/db")
            for i in 0..<5 { _ = try await h.request(.PUT, "/db/d\(i)", body: #"{"v":1}"#) }
            #expect(try await h.request(.PUT, "/db/_security", body: #"{"readers":{"roles":["peer"]}}"#).status == 200)
            let collection = try #require(try peer.database("db", create: true)).defaultCollection()
            let mine = MutableDocument(id: "local-only")
            try collection.save(mine)
            let url = try #require(URL(string: "\(h.base)/db?fp=\(try h.node.tlsIdentity().fingerprint)"))
            var config = ReplicatorConfiguration(collection: collection, target: .url(url))
            config.clientIdentity = identity
            let replicator = Replicator(config: config)
            let result = try await replicator.runOnce()
            #expect(result.pulled == 5)
            #expect(try collection.count == 6)
            let error = try #require(replicator.status.error as? CouchError)
            #expect(error.status == 403 && error.reason.contains("may read 'db' but not write it"))
            #expect(try await h.request(.GET, "/db/local-only").status == 404)
            // The source refused its checkpoint: the next run resumes from the puller's own, not from the start.
            let again = Replicator(config: config)
            _ = try await again.runOnce()
            #expect(again.status.progress.completed == 0)

            // Continuous: it keeps pulling after the refusal.
            config.continuous = true
            let continuous = Replicator(config: config)
            continuous.start()
            _ = try await h.request(.PUT, "/db/later", body: #"{"v":2}"#)
            let deadline = ContinuousClock.now + .seconds(20)
            while try collection.document(id: "later") == nil || continuous.status.error == nil, ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(50))
            }
            #expect(try collection.document(id: "later") != nil)
            #expect((continuous.status.error as? CouchError)?.status == 403)
            continuous.stop()
            await continuous.waitUntilStopped()
        }
    }

    @Test func replicateOnTheNodeNeedsTheAskersAccess() async throws {
        let h = try await ListenerHarness(authenticator: Self.authenticator)
        try await withCleanup({ await h.shutdown() }) {
            _ = try await h.request(.PUT, "/db")
            _ = try await h.request(.PUT, "/target")
            #expect(try await h.request(.PUT, "/db/_security", body: #"{"members":{"names":["wendy"]}}"#).status == 200)
            let olga = Self.basic("olga", "pw"), wendy = Self.basic("wendy", "pw")
            let cancel = try await h.request(.POST, "/_replicate", body: #"{"source":"db","target":"target","continuous":true,"cancel":true}"#, auth: olga)
            #expect(cancel.status == 403)
            let reading = try await h.request(.POST, "/_replicate", body: #"{"source":"db","target":"target"}"#, auth: olga)
            #expect(reading.status == 403 && reading.body.contains("may not read 'db'"))
            let creating = try await h.request(.POST, "/_replicate", body: #"{"source":"target","target":"fresh","create_target":true}"#, auth: wendy)
            #expect(creating.status == 403 && creating.body.contains("server admins"))
            #expect(try await h.request(.POST, "/_replicate", body: #"{"source":"db","target":"target"}"#, auth: wendy).status == 200)
        }
    }
}
