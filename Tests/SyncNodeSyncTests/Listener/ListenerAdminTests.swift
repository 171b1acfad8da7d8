import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import Testing
@testable import SyncNodeStore
@testable import SyncNodeSync

/// The endpoints an operator and the dashboard use: CouchDB's maintenance and task shapes,
/// `/_node/...`, the metrics and the dashboard's files.
@Suite struct ListenerAdminTests {
    /// Polls `condition` for up to 60 s (a loaded machine takes its time; a pass returns at once).
    static func eventually(_ condition: () async throws -> Bool) async throws -> Bool {
        let deadline = ContinuousClock.now.advanced(by: .seconds(60))
        while ContinuousClock.now < deadline {
            if try await condition() { return true }
            try await Task.sleep(for: .milliseconds(100))
        }
        return false
    }

    @Test func revsLimitIsKeptAndPrunesHistory() async throws {
        let h = try await ListenerHarness()
        try await withCleanup({ await h.shutdown(removeDirectory: false) }) {
            #expect(try await h.request(.PUT, "/db").status == 201)
            #expect(String(try await h.request(.GET, "/db/_revs_limit").body) == "20")
            for bad in ["0", "-3", "\"5\"", "2.5", "{}"] {
                let refused = try await h.request(.PUT, "/db/_revs_limit", body: bad)
                #expect(refused.status == 400 && refused["error"]?.string == "bad_request", "\(bad)")
            }
            #expect(try await h.request(.POST, "/db/_revs_limit", body: "3").status == 405)
            #expect(try await h.request(.PUT, "/db/_revs_limit", body: "3").status == 200)
            #expect(String(try await h.request(.GET, "/db/_revs_limit").body) == "3")
            var rev = try #require(try await h.request(.PUT, "/db/d", body: #"{"n":0}"#)["rev"]?.string)
            for n in 1...6 {
                rev = try #require(try await h.request(.PUT, "/db/d?rev=\(rev)", body: #"{"n":\#(n)}"#)["rev"]?.string)
            }
            #expect(try await h.request(.GET, "/db/d?revs=true")["_revisions"]?["ids"]?.array?.count == 3)
        }
        // Kept in the file: the database opened again has it.
        let reopened = try await ListenerHarness(directory: h.directory)
        let limit = try? await reopened.request(.GET, "/db/_revs_limit")
        await reopened.shutdown()
        #expect(limit?.body == "3")
    }

    @Test func purgeForgetsDocumentsWhoseLeavesAreAllNamed() async throws {
        let h = try await ListenerHarness()
        try await withCleanup({ await h.shutdown() }) {
            #expect(try await h.request(.PUT, "/db").status == 201)
            let rev = try #require(try await h.request(.PUT, "/db/gone", body: "{}")["rev"]?.string)
            #expect(try await h.request(.PUT, "/db/kept", body: "{}").status == 201)
            // A second leaf of `kept`, so naming one leaf is not enough.
            let branch = #"{"docs":[{"_id":"kept","_rev":"1-0000000000000000000000000000000a"}],"new_edits":false}"#
            #expect(try await h.request(.POST, "/db/_bulk_docs", body: branch).status == 201)
            let keptRev = try #require(try await h.request(.GET, "/db/kept?conflicts=true")["_rev"]?.string)

            let reply = try await h.request(.POST, "/db/_purge", body: #"{"gone":["\#(rev)"],"kept":["\#(keptRev)"],"never":["1-x"]}"#)
            #expect(reply.status == 201)
            #expect(reply["purged"] == ["gone": [.string(rev)], "kept": [], "never": []])
            #expect(try await h.request(.GET, "/db/gone").status == 404)
            #expect(try await h.request(.GET, "/db/_changes")["results"]?.array?.contains { $0["id"]?.string == "gone" } == false,
                    "no tombstone: the purge does not replicate")
            #expect(try await h.request(.GET, "/db/kept").status == 200)
            #expect(try await h.request(.POST, "/db/_purge", body: #"{"kept":"1-x"}"#).status == 400)
            #expect(try await h.request(.GET, "/db/_purge").status == 405)
        }
    }

    @Test func compactionRunsInTheBackground() async throws {
        let h = try await ListenerHarness()
        try await withCleanup({ await h.shutdown() }) {
            #expect(try await h.request(.PUT, "/db").status == 201)
            var rev = try #require(try await h.request(.PUT, "/db/d", body: #"{"pad":"\#(String(repeating: "x", count: 50_000))"}"#)["rev"]?.string)
            for _ in 0..<5 {
                rev = try #require(try await h.request(.PUT, "/db/d?rev=\(rev)", body: #"{"pad":"\#(String(repeating: "y", count: 50_000))"}"#)["rev"]?.string)
            }
            let before = try #require(try await h.request(.GET, "/db")["sizes"]?["file"]?.int)
            let started = try await h.request(.POST, "/db/_compact", headers: [("Content-Type", "application/json")])
            #expect(started.status == 202 && started["ok"] == .bool(true))
            #expect(try await Self.eventually { try await h.request(.GET, "/db")["compact_running"] == .bool(false) })
            let after = try #require(try await h.request(.GET, "/db")["sizes"]?["file"]?.int)
            #expect(after < before, "old bodies dropped and the file vacuumed: \(before) -> \(after)")
            #expect(try await h.request(.GET, "/db/d")["_rev"]?.string == rev)
        }
    }

    @Test func runningReplicationsAreListedAsTasksAndJobs() async throws {
        let h = try await ListenerHarness()
        try await withCleanup({ await h.shutdown() }) {
            #expect(try await h.request(.PUT, "/a").status == 201)
            #expect(try await h.request(.PUT, "/b").status == 201)
            #expect(try await h.request(.PUT, "/a/one", body: #"{"n":1}"#).status == 201)
            #expect(try await h.request(.GET, "/_active_tasks").json == [])
            let started = try await h.request(.POST, "/_replicate", body: #"{"source":"a","target":"b","continuous":true}"#)
            #expect(started.status == 202)
            let id = try #require(started["_local_id"]?.string)
            #expect(try await Self.eventually { try await h.request(.GET, "/b/one").status == 200 })
            #expect(try await Self.eventually {
                try await h.request(.GET, "/_active_tasks").json.array?.first?["checkpointed_source_seq"]?.string != nil
            })
            let task = try #require(try await h.request(.GET, "/_active_tasks").json.array?.first)
            #expect(task["type"]?.string == "replication" && task["source"]?.string == "a" && task["target"]?.string == "b")
            #expect(task["continuous"] == .bool(true) && task["docs_written"]?.int == 1 && task["changes_pending"]?.int == 0)
            let jobs = try await h.request(.GET, "/_scheduler/jobs")
            #expect(jobs["total_rows"]?.int == 1 && jobs["jobs"]?.array?.first?["source"]?.string == "a")

            let cancel = #"{"source":"a","target":"b","continuous":true,"cancel":true,"replication_id":"\#(id)"}"#
            #expect(try await h.request(.POST, "/_replicate", body: cancel).status == 200)
            #expect(try await h.request(.GET, "/_active_tasks").json == [])
            let recent = try #require(try await h.request(.GET, "/_node/replications/recent").json.array?.first)
            #expect(recent["state"]?.string == "ended" && recent["ended_on"]?.int != nil && recent["docs_written"]?.int == 1)
        }
    }

    /// A continuous `_replicate` that stops by itself (its peer refuses it) leaves the running
    /// tasks and is listed as recent, without being cancelled.
    @Test func aReplicationThatStopsByItselfIsNoLongerListedAsRunning() async throws {
        let h = try await ListenerHarness()
        let other = try await ListenerHarness()
        try await withCleanup({
            await h.shutdown()
            await other.shutdown()
        }) {
            #expect(try await h.request(.PUT, "/a").status == 201)
            // Another node, asked without credentials: it answers 401, which ends a replication.
            let fingerprint = try other.node.tlsIdentity().fingerprint
            let refused = #"{"source":"a","target":"\#(other.base)/b?fp=\#(fingerprint)","continuous":true}"#
            #expect(try await h.request(.POST, "/_replicate", body: refused).status == 202)
            #expect(try await Self.eventually { try await h.request(.GET, "/_active_tasks").json == [] })
            let recent = try #require(try await h.request(.GET, "/_node/replications/recent").json.array?.first)
            #expect(recent["state"]?.string == "ended" && recent["last_error"]?.string?.contains("401") == true, "\(recent)")
        }
    }

    /// A one-shot `_replicate` whose asker leaves (closes its connection) stops: its task is gone
    /// at once, not after `connection_timeout` per attempt (here ten minutes).
    @Test func aOneShotReplicationEndsWhenItsAskerLeaves() async throws {
        let (tarpit, port) = try Tarpit.open()
        defer { close(tarpit) }
        let h = try await ListenerHarness()
        try await withCleanup({ await h.shutdown() }) {
            #expect(try await h.request(.PUT, "/a").status == 201)
            var request = HTTPClientRequest(url: h.base + "/_replicate")
            request.method = .POST
            request.headers.add(name: "Authorization", value: ListenerHarness.authorization)
            request.headers.add(name: "Content-Type", value: "application/json")
            request.body = .bytes(ByteBuffer(string: #"{"source":"a","target":"http://127.0.0.1:\#(port)/db","connection_timeout":600000}"#))
            // The asker gives up after two seconds: its client closes the connection.
            await #expect(throws: (any Error).self) { _ = try await h.client.execute(request, timeout: .seconds(2)) }
            var tasks = try await h.request(.GET, "/_active_tasks").json
            let deadline = ContinuousClock.now + .seconds(20)
            while tasks != [], ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(100))
                tasks = try await h.request(.GET, "/_active_tasks").json
            }
            #expect(tasks == [], "\(tasks)")
        }
    }

    /// A one-shot `_replicate` toward a peer that accepts connections and never answers (a
    /// tarpit: a socket that listens and never reads) answers 502 naming the peer, after
    /// `connection_timeout` per attempt, and leaves no task behind.
    @Test func aOneShotReplicationTowardATarpitAnswers502() async throws {
        let (tarpit, port) = try Tarpit.open()
        defer { close(tarpit) }
        let h = try await ListenerHarness()
        try await withCleanup({ await h.shutdown() }) {
            #expect(try await h.request(.PUT, "/a").status == 201)
            let started = ContinuousClock.now
            let body = #"{"source":"a","target":"http://127.0.0.1:\#(port)/db","connection_timeout":1000}"#
            let answer = try await h.request(.POST, "/_replicate", body: body)
            let took = ContinuousClock.now - started
            #expect(answer.status == 502 && answer.body.contains("127.0.0.1:\(port)"), "\(answer.status) \(answer.body)")
            // Three attempts of about a second, not minutes (a loose bound: the machine is shared).
            #expect(took < .seconds(30), "took \(took)")
            print("_replicate toward a tarpit with connection_timeout 1000: 502 after \(took)")
            #expect(try await h.request(.GET, "/_active_tasks").json == [])
            #expect(try await h.request(.POST, "/_replicate", body: #"{"source":"a","target":"b","connection_timeout":"soon"}"#).status == 400)
        }
    }

    @Test func nodeEndpointsDescribeDatabasesAndResolveConflicts() async throws {
        let h = try await ListenerHarness()
        try await withCleanup({ await h.shutdown() }) {
            #expect(try await h.request(.PUT, "/db").status == 201)
            #expect(try await h.request(.PUT, "/db.s.c").status == 201)
            let info = try await h.request(.GET, "/_node/info")
            let fingerprint = try h.node.tlsIdentity().fingerprint
            #expect(info["uuid"]?.string == h.node.uuid && info["fingerprint"]?.string == fingerprint)
            #expect(info["tls"] == .bool(true) && info["read_only"] == .bool(false) && info["pairing_url"] == .null)
            #expect(try await h.request(.GET, "/_node/peers").status == 404, "no console: a bare listener keeps no peers")
            #expect(try await h.request(.GET, "/_node/qr.svg").status == 404)

            // Two leaves of `doc`.
            let leaves = #"{"docs":[{"_id":"doc","_rev":"1-00000000000000000000000000000001","v":"a"},{"_id":"doc","_rev":"1-00000000000000000000000000000002","v":"b"}],"new_edits":false}"#
            #expect(try await h.request(.POST, "/db/_bulk_docs", body: leaves).status == 201)
            let databases = try #require(try await h.request(.GET, "/_node/databases").json.array?.first)
            #expect(databases["name"]?.string == "db" && (databases["size"]?.int ?? 0) > 0)
            #expect(databases["collections"]?.array?.compactMap { $0["keyspace"]?.string } == ["db", "db.s.c"])
            #expect(databases["collections"]?.array?.first?["doc_count"]?.int == 1)

            let conflicts = try await h.request(.GET, "/_node/conflicts/db").json
            #expect(conflicts == [["id": "doc", "winner": "1-00000000000000000000000000000002", "conflicts": ["1-00000000000000000000000000000001"]]])
            let stale = #"{"keep":"1-00000000000000000000000000000001","leaves":["1-00000000000000000000000000000001"]}"#
            #expect(try await h.request(.POST, "/_node/conflicts/db/doc", body: stale).status == 409, "the asker saw other leaves")
            let resolve = #"{"keep":"1-00000000000000000000000000000001","leaves":["1-00000000000000000000000000000001","1-00000000000000000000000000000002"]}"#
            let resolved = try await h.request(.POST, "/_node/conflicts/db/doc", body: resolve)
            #expect(resolved.status == 200 && resolved["rev"]?.string == "1-00000000000000000000000000000001")
            #expect(try await h.request(.GET, "/_node/conflicts/db").json == [])
            #expect(try await h.request(.GET, "/db/doc")["v"]?.string == "a")
            #expect(try await h.request(.POST, "/_node/conflicts/db/nope", body: resolve).status == 404)
        }
    }

    @Test func nodeEndpointsAreForServerAdmins() async throws {
        let users = ListenerAuthenticator({ user, password in password == "pw" }, roles: { user in user == "root" ? ["_admin"] : [] })
        let h = try await ListenerHarness(authenticator: users)
        try await withCleanup({ await h.shutdown() }) {
            let member = "Basic " + Data("bob:pw".utf8).base64EncodedString()
            let admin = "Basic " + Data("root:pw".utf8).base64EncodedString()
            for path in ["/_node/info", "/_node/databases", "/_active_tasks", "/_scheduler/jobs", "/_node/_local/_prometheus", "/_node/events"] {
                #expect(try await h.request(.GET, path, auth: member).status == 403, "\(path)")
            }
            #expect(try await h.request(.GET, "/_node/info", auth: admin).status == 200)
            #expect(try await h.request(.GET, "/_node/keyspaces", auth: member).status == 200, "peers ask it")
            // A script asking not to be challenged gets no Basic challenge (no browser login dialog).
            let plain = try await h.request(.GET, "/_node/info", auth: nil)
            #expect(plain.status == 401 && plain.headers["www-authenticate"] != nil)
            let script = try await h.request(.GET, "/_node/info", headers: [("X-Requested-With", "XMLHttpRequest")], auth: nil)
            #expect(script.status == 401 && script.headers["www-authenticate"] == nil && script["error"]?.string == "unauthorized")
        }
    }

    @Test func theDashboardIsServedToAnyoneWithAStrictPolicy() async throws {
        let h = try await ListenerHarness()
        try await withCleanup({ await h.shutdown() }) {
            let page = try await h.request(.GET, "/_utils/", auth: nil)
            #expect(page.status == 200 && page.headers["content-type"]?.hasPrefix("text/html") == true)
            #expect(page.body.contains("dashboard.js") && page.body.contains("dashboard.css"))
            #expect(page.headers["content-security-policy"]?.contains("default-src 'self'") == true)
            #expect(page.headers["x-content-type-options"] == "nosniff")
            for (file, type) in [("dashboard.js", "text/javascript"), ("dashboard.css", "text/css"), ("index.html", "text/html")] {
                let reply = try await h.request(.GET, "/_utils/\(file)", auth: nil)
                #expect(reply.status == 200 && reply.headers["content-type"]?.hasPrefix(type) == true && reply.bytes.count > 500, "\(file)")
            }
            // Redirected to /_utils/ (the client follows it).
            let bare = try await h.request(.GET, "/_utils", auth: nil)
            #expect(bare.status == 200 && bare.body == page.body)
            #expect(try await h.request(.GET, "/_utils/../_all_dbs", auth: nil).status != 200)
            #expect(try await h.request(.GET, "/_utils/nope.js", auth: nil).status == 404)
            #expect(try await h.request(.POST, "/_utils/", body: "{}", auth: nil).status == 405)
        }
    }

    /// A page of another site cannot write with a signed-in user's credentials, and nothing a
    /// writer stores runs as a page of the node's origin.
    @Test func crossSiteWritesAreRefusedAndStoredPagesAreSandboxed() async throws {
        let h = try await ListenerHarness()
        try await withCleanup({ await h.shutdown() }) {
            #expect(try await h.request(.PUT, "/db").status == 201)
            let evil = try await h.request(.POST, "/db", body: #"{"_id":"x"}"#, headers: [("Origin", "https://evil.example")])
            #expect(evil.status == 403 && evil.body.contains("evil.example"))
            #expect(try await h.request(.POST, "/db", body: #"{"_id":"x"}"#, headers: [("Origin", h.base)]).status == 201, "the node's own pages")
            #expect(try await h.request(.POST, "/db", body: #"{"_id":"y"}"#, headers: [("Origin", "http://app.example")]).status == 201, "an allowed origin")
            #expect(try await h.request(.GET, "/db/x", headers: [("Origin", "https://evil.example")]).status == 200, "reads are CORS's business")

            let page = Array("<script>alert(document.cookie)</script>".utf8)
            let rev = try #require(try await h.request(.GET, "/db/x")["_rev"]?.string)
            #expect(try await h.request(.PUT, "/db/x/page.html?rev=\(rev)", bytes: page, headers: [("Content-Type", "text/html")]).status == 201)
            let served = try await h.request(.GET, "/db/x/page.html")
            #expect(served.bytes == page && served.headers["content-type"]?.hasPrefix("text/html") == true)
            #expect(served.headers["content-security-policy"]?.hasPrefix("sandbox") == true && served.headers["x-content-type-options"] == "nosniff")

            // An expired cookie session gets no Basic challenge (no browser dialog over the dashboard).
            let lapsed = try await h.request(.GET, "/_node/info", headers: [("Cookie", "AuthSession=bogus")], auth: nil)
            #expect(lapsed.status == 401 && lapsed.headers["www-authenticate"] == nil)
        }
    }
}
