import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import Testing
@testable import SyncNodeStore
@testable import SyncNodeSync

/// Pairing by invitation: a token redeemed with a client certificate makes that certificate a
/// trusted peer with the invitation's scope, and nothing else does.
@Suite struct InvitationTests {
    /// A harness that admits peers by certificate (none trusted yet), with logins not slowed down.
    static func harness() async throws -> ListenerHarness {
        try await ListenerHarness(authFailuresPerMinute: 1000, peerTrust: (trusted: [], firstUse: false))
    }

    static func redeem(_ client: HTTPClient, _ h: ListenerHarness, token: String, uuid: String = UUID().uuidString) async throws -> (Int, DocumentValue) {
        let (status, body) = try await PeerCertificateTests.send(client, h, .POST, "/_node/redeem", body: #"{"token":"\#(token)","uuid":"\#(uuid)","name":"tablet"}"#)
        return (status, (try? DocumentValue(json: body)) ?? .null)
    }

    /// What a refusal must leave alone: the trusted peers and the invitations as they were.
    static func state(_ h: ListenerHarness) throws -> String {
        let trust = (try? String(contentsOf: h.directory.appendingPathComponent(".node/trusted-peers"), encoding: .utf8)) ?? ""
        let invitations = (try? String(contentsOf: h.directory.appendingPathComponent(".node/invitations.json"), encoding: .utf8)) ?? ""
        return trust + "\n--\n" + invitations
    }

    @Test func hostileRedemptionsAreRefusedAndChangeNothing() async throws {
        let (first, firstDir) = try PeerCertificateTests.identity()
        let (second, secondDir) = try PeerCertificateTests.identity()
        defer { for d in [firstDir, secondDir] { try? FileManager.default.removeItem(at: d) } }
        let h = try await Self.harness()
        let clients = try [first, second].map { try PeerCertificateTests.client(of: h, presenting: $0) } + [try PeerCertificateTests.client(of: h, presenting: nil)]
        try await withCleanup({
            for c in clients { try? await c.shutdown() }
            await h.shutdown()
        }) {
            #expect(try await h.request(.PUT, "/db").status == 201)
            let store = InvitationStore(directory: h.node)
            let (invitation, token) = try store.create(scope: PeerScope(keyspaces: [.database("db")], access: .write), uses: 1, note: "for the tablet")
            #expect(token.count >= 43)  // 256 bits in base64url
            #expect(!(try Self.state(h)).contains(token))

            // Before: the certificate is a stranger.
            #expect(try await PeerCertificateTests.send(clients[0], h, .GET, "/db").0 == 401)
            // No client certificate: refused, nothing used.
            var before = try Self.state(h)
            let (noCert, noCertBody) = try await Self.redeem(clients[2], h, token: token)
            #expect(noCert == 401 && noCertBody["reason"]?.string?.contains("client certificate") == true, "\(noCertBody)")
            #expect(try Self.state(h) == before)
            // A forged token.
            let (forged, forgedBody) = try await Self.redeem(clients[0], h, token: InvitationStore.random(bytes: 32))
            #expect(forged == 401 && forgedBody["reason"]?.string?.contains("not known") == true, "\(forgedBody)")
            #expect(try Self.state(h) == before)

            // The real redemption: trusted by certificate, with the invitation's scope.
            let (ok, answer) = try await Self.redeem(clients[0], h, token: token)
            #expect(ok == 200 && answer["uuid"]?.string == h.node.uuid && answer["access"]?.string == "write", "\(answer)")
            #expect(answer["keyspaces"] == ["db"])
            let entry = try #require(try TrustStore(directory: h.node).entries().first { $0.fingerprint == first.fingerprint })
            #expect(entry.invitation == invitation.id && entry.scope == PeerScope(keyspaces: [.database("db")], access: .write))
            #expect(try await PeerCertificateTests.send(clients[0], h, .PUT, "/db/from-peer", body: #"{"v":1}"#).0 == 201)
            // The same peer may present it again (its URL keeps working for it)...
            #expect(try await Self.redeem(clients[0], h, token: token).0 == 200)
            // ...anyone else may not: a second use of a one-time token.
            before = try Self.state(h)
            let (replay, replayBody) = try await Self.redeem(clients[1], h, token: token)
            #expect(replay == 401 && replayBody["reason"]?.string?.contains("used already") == true, "\(replayBody)")
            #expect(try Self.state(h) == before)
            #expect(try await PeerCertificateTests.send(clients[1], h, .GET, "/db").0 == 401)

            // Expired.
            let (_, shortLived) = try store.create(lifetime: .seconds(1))
            try await Task.sleep(for: .milliseconds(1500))
            before = try Self.state(h)
            let (expired, expiredBody) = try await Self.redeem(clients[1], h, token: shortLived)
            #expect(expired == 401 && expiredBody["reason"]?.string?.contains("expired") == true, "\(expiredBody)")
            #expect(try Self.state(h) == before)

            // Revoked.
            let (revokable, revokedToken) = try store.create(uses: nil)
            #expect(try store.revoke(id: revokable.id)?.revoked == true)
            before = try Self.state(h)
            let (revoked, revokedBody) = try await Self.redeem(clients[1], h, token: revokedToken)
            #expect(revoked == 401 && revokedBody["reason"]?.string?.contains("revoked") == true, "\(revokedBody)")
            #expect(try Self.state(h) == before)

            // Untrusted after redeeming: the invitation does not bring the peer back.
            #expect(try TrustStore(directory: h.node).remove(fingerprint: first.fingerprint))
            let (again, againBody) = try await Self.redeem(clients[0], h, token: token)
            #expect(again == 401 && againBody["reason"]?.string?.contains("untrusted since") == true, "\(againBody)")
            #expect(try await PeerCertificateTests.send(clients[0], h, .GET, "/db").0 == 401)
            // The listing shows each, the token never.
            let listed = try await h.request(.GET, "/_node/invitations")
            #expect(listed.status == 200 && !listed.body.contains(token) && !listed.body.contains("hash"))
        }
    }

    /// A certificate may not take over another peer's UUID (its name and grants), nor the node's
    /// own; pairing again keeps a peer's scope; hand-written lines and bad keyspaces are handled.
    @Test func uuidsAreNotTakenOverAndScopesNotWidened() async throws {
        let (first, firstDir) = try PeerCertificateTests.identity()
        let (second, secondDir) = try PeerCertificateTests.identity()
        defer { for d in [firstDir, secondDir] { try? FileManager.default.removeItem(at: d) } }
        let h = try await Self.harness()
        let clients = try [first, second].map { try PeerCertificateTests.client(of: h, presenting: $0) }
        try await withCleanup({
            for c in clients { try? await c.shutdown() }
            await h.shutdown()
        }) {
            let store = InvitationStore(directory: h.node)
            let victim = UUID().uuidString.lowercased()
            let (_, readOnly) = try store.create(scope: PeerScope(keyspaces: [.database("db")], access: .read), uses: nil)
            #expect(try await Self.redeem(clients[0], h, token: readOnly, uuid: victim).0 == 200)
            let before = try Self.state(h)
            for uuid in [victim, h.node.uuid] {
                let (status, body) = try await Self.redeem(clients[1], h, token: readOnly, uuid: uuid)
                #expect(status == 401 && body["reason"]?.string?.contains("another certificate") == true, "\(body)")
            }
            #expect(try Self.state(h) == before)
            // Pairing again with the same certificate (what `syncnode pair` does) keeps its scope.
            let trust = try TrustStore(directory: h.node)
            try trust.add(fingerprint: first.fingerprint, uuid: victim, note: "paired again")
            #expect(trust.peer(clientFingerprint: first.fingerprint)?.scope == PeerScope(keyspaces: [.database("db")], access: .read))
            #expect(try trust.entries().first { $0.fingerprint == first.fingerprint }?.invitation != nil)
            // Keyspaces that could break the file are refused; words added by hand are kept out of the way.
            for bad in ["a b", "db#x", "db,x", "a=b"] {
                #expect(throws: SyncError.self) { try trust.add(fingerprint: second.fingerprint, scope: PeerScope(keyspaces: [.database(bad)])) }
                #expect(throws: SyncError.self) { try store.create(scope: PeerScope(keyspaces: [.database(bad)])) }
            }
            let file = h.directory.appendingPathComponent(".node/trusted-peers")
            try (try String(contentsOf: file, encoding: .utf8) + "\(second.fingerprint) \(UUID().uuidString) laptop upstairs\n").write(to: file, atomically: true, encoding: .utf8)
            #expect(try TrustStore(directory: h.node).peer(clientFingerprint: second.fingerprint)?.scope == .everything)
        }
    }

    /// The client tries the URL's host, then each of its other addresses, until the node answers.
    @Test func theClientTriesEachAddressOfTheURL() async throws {
        let (peer, peerDir) = try PeerCertificateTests.identity()
        defer { try? FileManager.default.removeItem(at: peerDir) }
        let h = try await Self.harness()
        try await withCleanup({ await h.shutdown() }) {
            let (_, token) = try InvitationStore(directory: h.node).create()
            let port = try #require(h.listener.port)
            // 127.0.0.2 is loopback too, but the listener is bound to 127.0.0.1 alone: refused there.
            let url = PairingURL(base: try #require(URL(string: "https://127.0.0.2:\(port)/")), database: "db", uuid: h.node.uuid,
                                 fingerprint: try h.node.tlsIdentity().fingerprint, invitation: token, addresses: ["127.0.0.1"])
            #expect(try PairingURL(string: url.url.absoluteString) == url)
            let answer = try await InvitationClient.redeem(url, identity: peer, uuid: UUID().uuidString, name: "tablet", timeout: .seconds(60))
            #expect(answer.host == "127.0.0.1" && answer.uuid == h.node.uuid && answer.scope == .everything)
            #expect(url.withoutInvitation(host: answer.host).url.absoluteString.contains("invite=") == false)
            // A URL none of whose addresses answers says so, naming each.
            let nowhere = PairingURL(base: try #require(URL(string: "https://127.0.0.2:\(port)/")), database: "db", uuid: h.node.uuid,
                                     fingerprint: try h.node.tlsIdentity().fingerprint, invitation: token, addresses: ["127.0.0.3"])
            do {
                _ = try await InvitationClient.redeem(nowhere, identity: peer, uuid: UUID().uuidString, name: "tablet", timeout: .seconds(60))
                Issue.record("no address answers, yet the redemption succeeded")
            } catch let error as SyncError {
                #expect("\(error)".contains("127.0.0.2") && "\(error)".contains("127.0.0.3"), "\(error)")
            }
        }
    }

    @Test func twoPeersRacingForAOneTimeInvitationOneWins() async throws {
        let identities = try (0..<4).map { _ in try PeerCertificateTests.identity() }
        defer { for (_, d) in identities { try? FileManager.default.removeItem(at: d) } }
        let h = try await Self.harness()
        let clients = try identities.map { try PeerCertificateTests.client(of: h, presenting: $0.0) }
        try await withCleanup({
            for c in clients { try? await c.shutdown() }
            await h.shutdown()
        }) {
            for round in 0..<5 {
                let (_, token) = try InvitationStore(directory: h.node).create(uses: 1, note: "race \(round)")
                let statuses = try await withThrowingTaskGroup(of: Int.self) { group in
                    for client in clients { group.addTask { try await Self.redeem(client, h, token: token).0 } }
                    return try await group.reduce(into: []) { $0.append($1) }
                }
                #expect(statuses.sorted() == [200, 401, 401, 401], "round \(round): \(statuses)")
            }
            // Each invitation has exactly one redeemer, and each redeemer is trusted (once).
            let trusted = try TrustStore(directory: h.node).entries().filter { !$0.revoked }.map(\.fingerprint)
            let invitations = try InvitationStore(directory: h.node).list()
            #expect(invitations.count == 5 && invitations.allSatisfy { $0.redeemedBy.count == 1 })
            #expect(Set(invitations.flatMap(\.redeemedBy)) == Set(trusted) && Set(trusted).count == trusted.count)
        }
    }

    /// The access matrix for peers admitted by invitation: exactly their scope, never a server admin.
    @Test func invitedPeersGetExactlyTheirScope() async throws {
        let (reader, readerDir) = try PeerCertificateTests.identity()
        let (writer, writerDir) = try PeerCertificateTests.identity()
        defer { for d in [readerDir, writerDir] { try? FileManager.default.removeItem(at: d) } }
        let h = try await Self.harness()
        let clients = try [reader, writer].map { try PeerCertificateTests.client(of: h, presenting: $0) }
        try await withCleanup({
            for c in clients { try? await c.shutdown() }
            await h.shutdown()
        }) {
            for path in ["/db", "/other"] { #expect(try await h.request(.PUT, path).status == 201) }
            _ = try await h.request(.PUT, "/db/doc", body: #"{"v":1}"#)
            _ = try await h.request(.PUT, "/other/doc", body: #"{"v":1}"#)
            let store = InvitationStore(directory: h.node)
            let (_, readToken) = try store.create(scope: PeerScope(keyspaces: [.database("db")], access: .read))
            let (_, writeToken) = try store.create(scope: PeerScope(keyspaces: [.database("db")], access: .write))
            #expect(try await Self.redeem(clients[0], h, token: readToken).0 == 200)
            #expect(try await Self.redeem(clients[1], h, token: writeToken).0 == 200)

            // (method, path, body, what a read-scoped peer gets, what a write-scoped one gets)
            let matrix: [(HTTPMethod, String, String?, Int, Int)] = [
                (.GET, "/db", nil, 200, 200),
                (.GET, "/db/doc", nil, 200, 200),
                (.GET, "/db/_all_docs", nil, 200, 200),
                (.GET, "/db/_changes", nil, 200, 200),
                (.POST, "/db/_bulk_get", #"{"docs":[{"id":"doc"}]}"#, 200, 200),
                (.POST, "/db/_revs_diff", #"{"doc":["1-abc"]}"#, 200, 200),
                (.POST, "/db/_find", #"{"selector":{}}"#, 200, 200),
                (.PUT, "/db/_local/checkpoint", #"{"seq":1}"#, 201, 201),  // its checkpoint: see CheckpointHorizon
                (.PUT, "/db/new", #"{"v":1}"#, 403, 201),
                (.POST, "/db/_bulk_docs", #"{"docs":[{"v":3}]}"#, 403, 201),
                // Outside the scope: nothing, not even reading.
                (.GET, "/other", nil, 403, 403),
                (.GET, "/other/doc", nil, 403, 403),
                (.PUT, "/other/x", #"{"v":1}"#, 403, 403),
                // Database administration.
                (.PUT, "/db/_security", #"{"members":{"names":["x"]}}"#, 403, 403),
                (.POST, "/db/_index", #"{"index":{"fields":["v"]}}"#, 403, 403),
                (.POST, "/db/_compact", "{}", 403, 403),
                (.POST, "/db/_purge", #"{"doc":["1-abc"]}"#, 403, 403),
                // Server administration.
                (.PUT, "/newdb", nil, 403, 403),
                (.DELETE, "/db", nil, 403, 403),
                (.POST, "/_replicate", #"{"source":"db","target":"https://127.0.0.1:1/x"}"#, 403, 403),
                (.GET, "/_active_tasks", nil, 403, 403),
                (.GET, "/_scheduler/jobs", nil, 403, 403),
                (.GET, "/_node/info", nil, 403, 403),
                (.GET, "/_node/_local/_prometheus", nil, 403, 403),
                (.GET, "/_node/invitations", nil, 403, 403),
                (.POST, "/_node/invitations", "{}", 403, 403),
                (.PUT, "/_node/trust/\(reader.fingerprint)", nil, 403, 403),
                (.GET, "/_node/events", nil, 403, 403),
            ]
            for (method, path, body, readStatus, writeStatus) in matrix {
                for (name, client, expected) in [("read peer", clients[0], readStatus), ("write peer", clients[1], writeStatus)] {
                    let (status, text) = try await PeerCertificateTests.send(client, h, method, path, body: body)
                    let what = "\(name): \(method) \(path) -> \(status) \(text)"
                    if expected == 403 {
                        #expect(status == 403 && text.contains(#""error":"forbidden""#), "\(what)")
                    } else {
                        #expect(status == expected, "\(what)")
                    }
                }
            }
            // Listings show the scope only.
            for client in clients {
                #expect(try await PeerCertificateTests.send(client, h, .GET, "/_all_dbs").1 == #"["db"]"#)
                #expect(try await PeerCertificateTests.send(client, h, .GET, "/_node/keyspaces").1 == #"["db"]"#)
            }
        }
    }
}

extension InvitationTests {
    /// A peer scoped to one collection may query it, and only it: the URL's keyspace does not
    /// bound what FROM and JOIN name, so the listener checks every collection the query reads.
    @Test func aScopedPeerQueriesOnlyItsCollections() async throws {
        let h = try await Self.harness()
        try await PeerCertificateTests.withPeerClient(of: h) { client, _ in
            let db = try #require(try h.node.database("db", create: true))
            for name in ["notes", "secrets"] {
                try db.createCollection(name: name, scope: "app").save(try MutableDocument(id: "\(name)-1", data: ["k": 1]))
            }
            let (_, token) = try InvitationStore(directory: h.node).create(scope: PeerScope(keyspaces: Keyspace("db.app.notes").map { [$0] }, access: .read))
            #expect(try await Self.redeem(client, h, token: token).0 == 200)
            func query(_ sql: String) async throws -> (Int, String) {
                try await PeerCertificateTests.send(client, h, .POST, "/db.app.notes/_query", body: #"{"query":"\#(sql)"}"#)
            }
            let allowed = try await query("SELECT META().id FROM app.notes")
            #expect(allowed.0 == 200 && allowed.1.contains("notes-1"), "\(allowed)")
            for sql in ["SELECT * FROM app.secrets", "SELECT * FROM app.notes AS n JOIN app.secrets AS s ON n.k = s.k",
                        "SELECT * FROM _", "SELECT * FROM app.nothing"] {
                let (status, body) = try await query(sql)
                #expect(status == 403 && body.contains(#""error":"forbidden""#) && !body.contains("secrets-1"), "\(sql) -> \(status) \(body)")
            }
            // The node's own admin is not scoped.
            let admin = try await h.request(.POST, "/db.app.notes/_query", body: #"{"query":"SELECT META().id FROM app.secrets"}"#)
            #expect(admin.status == 200)
        }
    }
}
