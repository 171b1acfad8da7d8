import Foundation
import Testing
@testable import SyncNodeStore
@testable import SyncNodeSync

/// PouchDB release bundles in Node.js replicate with a node over HTTPS both
/// ways, live too (Tests/interop/pouchdb_sync.js), and every side ends with
/// the same winners, conflicts and attachments.
///
/// Needs `SYNCNODE_POUCHDB_DIR`: a folder with `load-pouchdb.js` and one
/// folder of bundles per version (`.ci/run` points it at the reference peers).
@Suite(.serialized, Interop.pouchDB)
struct PouchDBInteropTests {

    @Test(arguments: ["9.0.0", "8.0.1", "7.3.1"])
    func pouchDBReplicatesBothWaysWithANode(version: String) async throws {
        let pouch = try #require(PouchDB.directory)
        guard FileManager.default.fileExists(atPath: "\(pouch)/\(version)/pouchdb.min.js") else {
            Issue.record("PouchDB \(version) is not in \(pouch)")
            return
        }
        let h = try await ListenerHarness()
        try await withCleanup({ await h.shutdown() }) {
            #expect(try await h.request(.PUT, "/pdb").status == 201)
            let (report, line) = try await PouchDB.run("pouchdb_sync.js", version: version, against: h, db: "pdb")
            #expect(report["pushed"]?["ok"] == true && report["pushed"]?["doc_write_failures"] == 0)
            #expect(report["pushed"]?["docs_written"] == 5)
            #expect(report["pulled"]?["ok"] == true && report["pulled"]?["doc_write_failures"] == 0)
            #expect(report["live"] == "live-from-node")

            // What PouchDB pushed, pulled back into a fresh PouchDB, is what it had.
            guard case .dictionary(let local)? = report["local"], case .dictionary(let fresh)? = report["fresh"] else {
                Issue.record("no documents in PouchDB's report: \(line.prefix(500))")
                return
            }
            #expect(local.count == 3)
            for (id, doc) in local {
                #expect(fresh[id] == doc, "\(id): pushed \(doc), pulled back \(String(describing: fresh[id]))")
                // And the node shows the same winner, conflicts and attachments.
                let ours = try await h.request(.GET, "/pdb/\(id)?conflicts=true&attachments=true", headers: [("Accept", "application/json")])
                #expect(ours["_rev"] == doc["winner"], "\(id) winner")
                #expect((ours["_conflicts"] ?? []) == doc["conflicts"], "\(id) conflicts")
                if case .dictionary(let atts)? = doc["attachments"] {
                    for (name, att) in atts {
                        let mine = ours["_attachments"]?[name]
                        #expect(mine?["digest"] == att["digest"] && mine?["data"] == att["data"] && mine?["revpos"] == att["revpos"], "\(id)/\(name)")
                    }
                }
            }
            #expect(try await h.request(.GET, "/pdb/pouch-deleted").status == 404)
        }
    }
}

extension PouchDBInteropTests {
    /// PouchDB pulls from a node with a `selector` (one-shot and live) and with `doc_ids`: exactly
    /// the matching documents arrive (Tests/interop/pouchdb_selector.js).
    @Test(arguments: ["9.0.0", "7.3.1"])
    func pouchDBPullsWhatASelectorMatches(version: String) async throws {
        let h = try await ListenerHarness()
        try await withCleanup({ await h.shutdown() }) {
            try await SelectorFeedTests.fill(h)
            let (report, _) = try await PouchDB.run("pouchdb_selector.js", version: version, against: h, db: "db")
            #expect(report["pulled"]?["ok"] == true && report["pulled"]?["doc_write_failures"] == 0)
            #expect(report["pulled"]?["docs_written"]?.int == Int64(SelectorFeedTests.orders.count))
            let selected = report["selector"]?.array?.compactMap { $0.string }
            #expect(selected == (SelectorFeedTests.orders + ["live-order"]).sorted())
            #expect(report["docIDs"]?.array?.compactMap { $0.string } == ["d7", "d8"])
            #expect(report["live"]?.array?.compactMap { $0.string } == ["live-order"])
        }
    }

    /// PouchDB 9 in headless Chromium (Debian's, driven by Playwright from `.venv`), on a page of
    /// another origin, syncs both ways with a `syncnode serve --cors-origin` process
    /// (Tests/interop/check_pouchdb_browser.py asserts what both sides hold).
    @Test(Interop.pythonClients) func pouchDBInChromiumSyncsWithANode() async throws {
        let pouch = try #require(PouchDB.directory)
        let python = Interop.python
        let script = packageRoot.appendingPathComponent("Tests/interop/check_pouchdb_browser.py").path
        let syncnode = try syncnodeExecutable().path
        let (status, stdout, stderr) = try await ChildProcess.runDetached(python, [script, pouch, syncnode])
        #expect(status == 0, "\(stderr.suffix(3000))")
        #expect(stdout.contains("pouchdb-browser: ok"))
    }
}

/// The PouchDB bundles at `SYNCNODE_POUCHDB_DIR`.
enum PouchDB {
    static var directory: String? { ProcessInfo.processInfo.environment["SYNCNODE_POUCHDB_DIR"].flatMap { $0.isEmpty ? nil : $0 } }

    /// Runs `Tests/interop/SCRIPT` in Node.js with PouchDB `version` against database `db` of the
    /// listener `h` (its credentials in the URL, its certificate trusted); the script's last line
    /// of output, parsed, and as text.
    static func run(_ script: String, version: String, against h: ListenerHarness, db: String) async throws -> (DocumentValue, String) {
        let pouch = try #require(directory)
        let password = ListenerHarness.password.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? ""
        let url = h.base.replacingOccurrences(of: "https://", with: "https://\(ListenerHarness.user):\(password)@") + "/\(db)"
        var environment = ProcessInfo.processInfo.environment
        environment["NODE_EXTRA_CA_CERTS"] = h.directory.appendingPathComponent(".node/tls/cert.pem").path
        let path = packageRoot.appendingPathComponent("Tests/interop/\(script)").path
        let (status, stdout, stderr) = try await ChildProcess.runDetached(
            URL(fileURLWithPath: "/usr/bin/env"), ["node", path, pouch, version, url], environment: environment)
        try #require(status == 0, "PouchDB \(version): \(stderr.suffix(2000))")
        let line = stdout.split(separator: "\n").last.map(String.init) ?? ""
        return (try DocumentValue(json: line), line)
    }
}
