import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import Testing
@testable import SyncNodeStore
@testable import SyncNodeSync

/// A real Apache CouchDB as a peer: its own replicator pulls from and pushes
/// to a node over HTTPS with cookie auth, and both sides must then hold the
/// same revisions, leaves, winners, bodies and attachment bytes.
///
/// Needs `SYNCNODE_COUCHDB_URL` (for example `http://admin:secret@127.0.0.1:25984`,
/// an admin's URL); `.ci/run` starts one. Without it these tests are skipped,
/// and say so.
@Suite(.serialized, Interop.couchDB)
struct CouchDBInteropTests {
    /// Fills the node's database with what replication must carry: plain
    /// documents, an edited one, a deletion, a conflict, text and binary attachments.
    static func fillNode(_ h: ListenerHarness, db: String) async throws {
        #expect(try await h.request(.PUT, "/\(db)").status == 201)
        var docs: [DocumentValue] = (0..<30).map { i in ["_id": .string("plain-\(i)"), "n": .int(Int64(i)), "s": "text é ✓"] }
        docs.append(["_id": "att-text", "_attachments": ["note.txt": ["content_type": "text/plain", "data": .string(Data(String(repeating: "hello couch ", count: 200).utf8).base64EncodedString())]]])
        docs.append(["_id": "att-binary", "_attachments": ["blob.bin": ["content_type": "application/octet-stream", "data": .string(Data((0..<4096).map { UInt8($0 % 251) }).base64EncodedString())]]])
        let reply = try await h.request(.POST, "/\(db)/_bulk_docs", body: (["docs": .array(docs)] as DocumentValue).toJSON())
        #expect(reply.status == 201)
        // An edit and a deletion.
        let edited = try #require(try await h.request(.GET, "/\(db)/plain-1")["_rev"]?.string)
        #expect(try await h.request(.PUT, "/\(db)/plain-1", body: #"{"n":100,"_rev":"\#(edited)"}"#).status == 201)
        let doomed = try #require(try await h.request(.GET, "/\(db)/plain-2")["_rev"]?.string)
        #expect(try await h.request(.DELETE, "/\(db)/plain-2?rev=\(doomed)").status == 200)
        // A conflict: two branches under one root, one made by a node and one by CouchDB's rules (32 hex digits).
        let conflict: DocumentValue = ["new_edits": false, "docs": [
            ["_id": "conflicted", "_rev": "2-0f6a4e2b5c1d3e4f5a6b7c8d9e0f1a2b", "side": "a", "_revisions": ["start": 2, "ids": ["0f6a4e2b5c1d3e4f5a6b7c8d9e0f1a2b", "11111111111111111111111111111111"]]],
            ["_id": "conflicted", "_rev": "2-f00dfeedf00dfeedf00dfeedf00dfeed", "side": "b", "_revisions": ["start": 2, "ids": ["f00dfeedf00dfeedf00dfeedf00dfeed", "11111111111111111111111111111111"]]],
        ]]
        #expect(try await h.request(.POST, "/\(db)/_bulk_docs", body: conflict.toJSON()).status == 201)
    }

    @Test func couchDBReplicatorPullsFromANodeAndPushesBackOverHTTPS() async throws {
        let couch = try CouchDB()
        let h = try await ListenerHarness()
        let target = "interop_pull_\(UUID().uuidString.prefix(8).lowercased())"
        try await withCleanup({ await h.shutdown(); await couch.shutdown(target) }) {
            try await Self.fillNode(h, db: "source")
            // CouchDB's replicator, node -> CouchDB, logging in with a session cookie.
            let pulled = try await couch.replicate(source: h.replicationEndpoint("source"), target: couch.endpoint(target), createTarget: true)
            #expect(pulled["ok"] == true, "\(pulled)")
            #expect(pulled["history"]?.array?.first?["doc_write_failures"] == 0, "\(pulled)")
            try await Self.expectSameDocuments(node: h, nodeDB: "source", couch: couch, couchDB: target)

            // New edits on CouchDB (text attachments it stores and sends gzip-encoded), CouchDB -> node.
            let text = Data(String(repeating: "compressible text ", count: 500).utf8).base64EncodedString()
            let couchEdits: DocumentValue = ["docs": [
                ["_id": "from-couch", "v": 1, "_attachments": ["readme.txt": ["content_type": "text/plain", "data": .string(text)]]],
                ["_id": "from-couch-2", "v": 2],
            ]]
            #expect(try await couch.request(.POST, "/\(target)/_bulk_docs", body: couchEdits.toJSON()).status == 201)
            let pushed = try await couch.replicate(source: couch.endpoint(target), target: h.replicationEndpoint("source"))
            #expect(pushed["ok"] == true, "\(pushed)")
            #expect(pushed["history"]?.array?.first?["doc_write_failures"] == 0, "\(pushed)")
            try await Self.expectSameDocuments(node: h, nodeDB: "source", couch: couch, couchDB: target)
        }
    }

    /// The same leaves give the same winner on a node and on CouchDB, for
    /// node-made, CouchDB-made and old 40-hex revisions in every pairing.
    @Test func conflictWinnersAgreeWithCouchDB() async throws {
        let couch = try CouchDB()
        let h = try await ListenerHarness()
        let db = "interop_winners_\(UUID().uuidString.prefix(8).lowercased())"
        try await withCleanup({ await h.shutdown(); await couch.shutdown(db) }) {
            #expect(try await h.request(.PUT, "/\(db)").status == 201)
            #expect(try await couch.request(.PUT, "/\(db)").status == 201)
            let suffixes = [
                "9b0e5c2f7d1a4e3b8c6f0a2d4e6b8c0a",              // 32 hex: bytes to CouchDB
                "0000000000000000000000000000000f",              // 32 hex, small bytes
                "ffffffffffffffffffffffffffffffff",              // 32 hex, the largest bytes
                "5e8f1a0c3b2d4f6a8c0e2a4c6e8a0c2e4a6c8e0a",      // 40 hex (earlier nodes): text to CouchDB
                "00000000000000000000000000000000000000000",     // 41 characters
                "abc",                                           // short text
            ]
            var pairs: [(String, String)] = []
            for (i, a) in suffixes.enumerated() { for b in suffixes[(i + 1)...] { pairs.append((a, b)) } }
            var docs: [DocumentValue] = []
            for (n, (a, b)) in pairs.enumerated() {
                for suffix in [a, b] {
                    docs.append(["_id": .string("pair-\(n)"), "_rev": .string("2-\(suffix)"), "who": .string(suffix),
                                 "_revisions": ["start": 2, "ids": [.string(suffix), "1111"]]])
                }
            }
            let body = (["new_edits": false, "docs": .array(docs)] as DocumentValue).toJSON()
            #expect(try await h.request(.POST, "/\(db)/_bulk_docs", body: body).status == 201)
            #expect(try await couch.request(.POST, "/\(db)/_bulk_docs", body: body).status == 201)
            for n in pairs.indices {
                let ours = try await h.request(.GET, "/\(db)/pair-\(n)")["_rev"]
                let theirs = try await couch.request(.GET, "/\(db)/pair-\(n)")["_rev"]
                #expect(ours == theirs, "pair \(pairs[n]): node \(String(describing: ours)), CouchDB \(String(describing: theirs))")
            }
        }
    }

    /// CouchDB's continuous replications, node -> CouchDB and back, carry new writes on either side.
    @Test func couchDBContinuousReplicationBothWays() async throws {
        let couch = try CouchDB()
        let h = try await ListenerHarness()
        let db = "interop_live_\(UUID().uuidString.prefix(8).lowercased())"
        try await withCleanup({ await h.shutdown(); await couch.shutdown(db) }) {
            #expect(try await h.request(.PUT, "/live").status == 201)
            #expect(try await couch.request(.PUT, "/\(db)").status == 201)
            let jobs: [DocumentValue] = [
                ["source": h.replicationEndpoint("live"), "target": couch.endpoint(db), "continuous": true],
                ["source": couch.endpoint(db), "target": h.replicationEndpoint("live"), "continuous": true],
            ]
            for job in jobs {
                let started = try await couch.request(.POST, "/_replicate", body: job.toJSON())
                #expect(started["ok"] == true, "\(started.body)")
            }
            func arrives(_ probe: () async throws -> Int) async throws -> Bool {
                let deadline = ContinuousClock.now.advanced(by: .seconds(90))
                while ContinuousClock.now < deadline {
                    if try await probe() == 200 { return true }
                    try await Task.sleep(for: .milliseconds(100))
                }
                return false
            }
            for round in 0..<3 {
                #expect(try await h.request(.PUT, "/live/node-\(round)", body: #"{"round":\#(round)}"#).status == 201)
                #expect(try await arrives { try await couch.request(.GET, "/\(db)/node-\(round)").status }, "node -> CouchDB, round \(round)")
                #expect(try await couch.request(.PUT, "/\(db)/couch-\(round)", body: #"{"round":\#(round)}"#).status == 201)
                #expect(try await arrives { try await h.request(.GET, "/live/couch-\(round)").status }, "CouchDB -> node, round \(round)")
            }
            for case .dictionary(var job) in jobs {
                job["cancel"] = true
                _ = try await couch.request(.POST, "/_replicate", body: DocumentValue.dictionary(job).toJSON())
            }
        }
    }

    /// Three nodes that sync only through one CouchDB (the hub of a network
    /// that outgrew a LAN) converge: the same documents, winners and no conflicts left.
    @Test func threeNodesConvergeThroughACouchDBHub() async throws {
        let couch = try CouchDB()
        let hub = "interop_hub_\(UUID().uuidString.prefix(8).lowercased())"
        let nodes = try (0..<3).map { _ in try ReplicatorTests.Peer() }
        try await withCleanup({ await couch.shutdown(hub) }) {
            #expect(try await couch.request(.PUT, "/\(hub)").status == 201)
            var url = try #require(URLComponents(string: couch.base + "/" + hub))
            let credentials = try #require(Data(base64Encoded: String(couch.authorization.dropFirst(6))).flatMap { String(data: $0, encoding: .utf8) })
            url.user = String(credentials.prefix { $0 != ":" })
            url.password = String(credentials.drop { $0 != ":" }.dropFirst())
            let hubURL = try #require(url.url)
            // Each node writes its own documents and edits a shared one: a three-way conflict.
            for (n, node) in nodes.enumerated() {
                for i in 0..<20 { try node.collection.save(try MutableDocument(id: "n\(n)-\(i)", data: ["n": n, "i": i])) }
                try node.collection.save(try MutableDocument(id: "shared", data: ["writer": n]))
            }
            try nodes[1].collection.delete(id: "n1-0")
            // Two rounds of push and pull, each node in turn, with the default resolver.
            for _ in 0..<2 {
                for node in nodes {
                    let replicator = Replicator(config: ReplicatorConfiguration(collection: node.collection, target: .url(hubURL)))
                    _ = try await replicator.runOnce()
                }
            }
            let states = try nodes.map { try ReplicatorTests.state($0.collection) }
            #expect(states[0].count == 61)
            #expect(states[1] == states[0] && states[2] == states[0])
            let winners = try nodes.map { try $0.collection.document(id: "shared")?.revisionID }
            #expect(winners[0] != nil && Set(winners).count == 1)
            #expect(try nodes.allSatisfy { try $0.collection.conflictingRevisions(id: "shared").isEmpty })
            let hubDoc = try await couch.request(.GET, "/\(hub)/shared?conflicts=true")
            #expect(hubDoc["_rev"]?.string == winners[0] && hubDoc["_conflicts"] == nil)
            #expect(try await couch.request(.GET, "/\(hub)/n1-0").status == 404)
            #expect(try await couch.request(.GET, "/\(hub)")["doc_count"] == 60)
        }
    }

    /// Every document of the node's database, with all its leaves, and every
    /// attachment's bytes, digest and revpos, equal on CouchDB.
    static func expectSameDocuments(node h: ListenerHarness, nodeDB: String, couch: CouchDB, couchDB: String) async throws {
        let nodeChanges = try await h.request(.GET, "/\(nodeDB)/_changes?style=all_docs")
        let couchChanges = try await couch.request(.GET, "/\(couchDB)/_changes?style=all_docs")
        func leaves(_ reply: ListenerHarness.Reply) -> [String: Set<String>] {
            var out: [String: Set<String>] = [:]
            for row in reply["results"]?.array ?? [] {
                guard let id = row["id"]?.string else { continue }
                out[id] = Set((row["changes"]?.array ?? []).compactMap { $0["rev"]?.string })
            }
            return out
        }
        let ours = leaves(nodeChanges), theirs = leaves(couchChanges)
        #expect(!ours.isEmpty)
        let differing = Set(ours.keys).union(theirs.keys).filter { ours[$0] != theirs[$0] }.sorted()
        #expect(differing.isEmpty, "leaf sets differ for \(differing.count) documents: \(differing.prefix(5)) node \(differing.prefix(3).map { ours[$0] ?? [] }) CouchDB \(differing.prefix(3).map { theirs[$0] ?? [] })")
        for id in ours.keys.sorted() {
            let path = "/\(id)?open_revs=all&revs=true&attachments=true"
            let a = try await h.request(.GET, "/\(nodeDB)" + path, headers: [("Accept", "application/json")])
            let b = try await couch.request(.GET, "/\(couchDB)" + path, headers: [("Accept", "application/json")])
            func byRev(_ reply: ListenerHarness.Reply) -> [String: DocumentValue] {
                var out: [String: DocumentValue] = [:]
                for entry in reply.json.array ?? [] {
                    guard case .dictionary(var doc)? = entry["ok"], let rev = doc["_rev"]?.string else { continue }
                    // Attachments compare by content, digest and revpos; how each side encodes them for transfer may differ.
                    if case .dictionary(let atts)? = doc["_attachments"] {
                        doc["_attachments"] = .dictionary(atts.mapValues { att in
                            guard case .dictionary(let e) = att else { return att }
                            let bytes = e["data"]?.string.flatMap { Data(base64Encoded: $0) } ?? Data()
                            // CouchDB's digest of a type it compresses covers its gzip bytes, which a node (storing the
                            // content decoded) does not have: there the content itself is compared.
                            let compressible = CouchDB.compresses(e["content_type"]?.string ?? "")
                            return ["content_type": e["content_type"] ?? .null, "length": .int(Int64(bytes.count)),
                                    "data": .string(bytes.base64EncodedString()), "digest": compressible ? .null : e["digest"] ?? .null,
                                    "revpos": e["revpos"] ?? .null]
                        })
                    }
                    out[rev] = .dictionary(doc)
                }
                return out
            }
            let same = byRev(a) == byRev(b)
            #expect(same, "document \(id) differs:\nnode   \(a.body.prefix(400))\ncouch  \(b.body.prefix(400))")
            if !same { continue }
            // The winner, too.
            let winnerA = try await h.request(.GET, "/\(nodeDB)/\(id)")["_rev"]
            let winnerB = try await couch.request(.GET, "/\(couchDB)/\(id)")["_rev"]
            #expect(winnerA == winnerB, "winner of \(id)")
        }
    }
}

extension ListenerHarness {
    /// How CouchDB's replicator reaches this listener's database: its URL
    /// and the credentials it logs in with (it asks for a session cookie).
    func replicationEndpoint(_ db: String) -> DocumentValue {
        ["url": .string("\(base)/\(db)"), "auth": ["basic": ["username": .string(Self.user), "password": .string(Self.password)]]]
    }
}

/// The CouchDB at `SYNCNODE_COUCHDB_URL`.
struct CouchDB {
    /// The content types CouchDB stores gzip-compressed (its default `compressible_types`).
    static func compresses(_ type: String) -> Bool {
        let t = type.lowercased()
        return t.hasPrefix("text/") || ["application/javascript", "application/json", "application/xml"].contains { t.hasPrefix($0) }
    }

    static var configured: Bool { ProcessInfo.processInfo.environment["SYNCNODE_COUCHDB_URL"]?.isEmpty == false }

    let base: String
    let authorization: String
    /// Made once the URL is known good: a client dropped without shutdown traps.
    let client: HTTPClient

    init() throws {
        guard let raw = ProcessInfo.processInfo.environment["SYNCNODE_COUCHDB_URL"], var url = URLComponents(string: raw),
              let user = url.user, let password = url.password else {
            throw SyncError.invalidConfiguration("SYNCNODE_COUCHDB_URL must be an admin's URL like http://admin:secret@127.0.0.1:25984")
        }
        authorization = "Basic " + Data("\(user):\(password)".utf8).base64EncodedString()
        url.user = nil
        url.password = nil
        url.path = ""
        base = url.string ?? raw
        client = HTTPClient(eventLoopGroup: MultiThreadedEventLoopGroup.singleton,
                            configuration: .init(timeout: .init(connect: .seconds(10), read: .seconds(120))))
    }

    func endpoint(_ db: String) -> DocumentValue {
        ["url": .string("\(base)/\(db)"), "headers": ["Authorization": .string(authorization)]]
    }

    func request(_ method: HTTPMethod, _ path: String, body: String? = nil, headers: [(String, String)] = []) async throws -> ListenerHarness.Reply {
        var request = HTTPClientRequest(url: base + path)
        request.method = method
        request.headers.add(name: "Authorization", value: authorization)
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        if let body {
            request.headers.add(name: "Content-Type", value: "application/json")
            request.body = .bytes(ByteBuffer(string: body))
        }
        let response = try await client.execute(request, timeout: .seconds(300))
        let data = try await response.body.collect(upTo: 256 << 20)
        var h: [String: String] = [:]
        for header in response.headers { h[header.name.lowercased()] = header.value }
        return ListenerHarness.Reply(status: Int(response.status.code), headers: h, body: String(buffer: data), bytes: Array(buffer: data))
    }

    /// A one-shot replication by CouchDB's replicator; its answer.
    /// `options` are more members of the job (`selector`, `doc_ids`...).
    func replicate(
        source: DocumentValue, target: DocumentValue, createTarget: Bool = false, options: [String: DocumentValue] = [:]
    ) async throws -> ListenerHarness.Reply {
        var job: [String: DocumentValue] = options.merging(["source": source, "target": target]) { $1 }
        if createTarget { job["create_target"] = true }
        return try await request(.POST, "/_replicate", body: DocumentValue.dictionary(job).toJSON())
    }

    /// Deletes the test's databases and closes the client.
    func shutdown(_ databases: String...) async {
        for db in databases { _ = try? await request(.DELETE, "/\(db)") }
        try? await client.shutdown()
    }
}

extension Array<UInt8> {
    /// Compared as one block (an element-wise `==` of megabytes takes seconds in a debug build).
    func elementsEqualFast(_ data: Data) -> Bool { Data(self) == data }
}
