import AsyncHTTPClient
import Foundation
import NIOHTTP1
import Testing
@testable import SyncNodeStore
@testable import SyncNodeSync

@Suite struct ListenerRobustnessTests {
    @Test func hundredConcurrentClientsLoseNoWrite() async throws {
        let h = try await ListenerHarness()
        try await withCleanup({ await h.shutdown() }) {
            _ = try await h.request(.PUT, "/db")
            try await withThrowingTaskGroup(of: Void.self) { group in
                for client in 0..<100 {
                    group.addTask {
                        var rev: String?
                        for round in 0..<3 {
                            let body = rev.map { #"{"_rev":"\#($0)","round":\#(round)}"# } ?? #"{"round":\#(round)}"#
                            let put = try await h.request(.PUT, "/db/c\(client)", body: body)
                            guard put.status == 201, let newRev = put["rev"]?.string else {
                                throw SyncError.listenerFailed("PUT c\(client): \(put.status) \(put.body)")
                            }
                            rev = newRev
                            let got = try await h.request(.GET, "/db/c\(client)")
                            guard got["round"]?.int == Int64(round) else { throw SyncError.listenerFailed("read back c\(client)") }
                            _ = try await h.request(.GET, "/db/_changes?limit=5")
                        }
                    }
                }
                try await group.waitForAll()
            }
            let info = try await h.request(.GET, "/db")
            #expect(info["doc_count"]?.int == 100)
            #expect(info["update_seq"]?.int == 300)
            let all = try await h.request(.GET, "/db/_all_docs?include_docs=true")
            #expect(all["rows"]?.array?.allSatisfy { $0["doc"]?["round"]?.int == 2 } == true)
        }
    }

    /// Thousands of random and malformed requests, then the server must still
    /// answer and the database must be intact.
    @Test func fuzzedRequestsNeitherCrashNorCorrupt() async throws {
        // A fixed database list, so a fuzzed `DELETE /db` is refused rather than obeyed.
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("syncnode-fuzz-\(UUID().uuidString)")
        _ = try NodeDirectory(url: dir).database("db", create: true)
        let h = try await ListenerHarness(directory: dir, authFailuresPerMinute: 100_000, databases: ["db"])
        try await withCleanup({ await h.shutdown() }) {
            for i in 0..<20 { _ = try await h.request(.PUT, "/db/keep\(i)", body: #"{"i":\#(i)}"#) }
            var rng = SystemRandomNumberGenerator()
            let methods: [HTTPMethod] = [.GET, .PUT, .POST, .DELETE, .HEAD, .PATCH, .OPTIONS, .RAW(value: "COPY"), .RAW(value: "BREW")]
            let pieces = ["db", "keep1", "_local", "_changes", "_bulk_docs", "_all_docs", "_revs_diff", "_bulk_get", "..", "%2e%2e",
                          "%2F", "%FF%FE", "%00", "a%", "_design", "x.y.z", "db.s.c", "🙂", "blob_%2Fa", "%252F", String(repeating: "z", count: 300)]
            let bodies = ["", "{", "[]", "null", #"{"docs":[{"_id":""}]}"#, #"{"docs":[1,2,"x"]}"#, #"{"_id":"../../etc","_rev":"x"}"#,
                          #"{"new_edits":false,"docs":[{"_id":"k","_rev":"bad"}]}"#, String(repeating: "[", count: 5000),
                          #"{"keys":[1,{},null]}"#, #"{"_attachments":{"../../x":{"data":"AAAA"}}}"#, "\u{FFFD}\u{0}\u{1}",
                          #"{"a":1e999}"#, #"{"since":"now","doc_ids":"x"}"#]
            var statuses: [Int: Int] = [:]
            for _ in 0..<2000 {
                let method = methods.randomElement(using: &rng) ?? .GET
                let depth = Int.random(in: 0...4, using: &rng)
                let path = "/" + (0..<depth).map { _ in pieces.randomElement(using: &rng) ?? "" }.joined(separator: "/")
                    + (Bool.random(using: &rng) ? "?rev=1-x&limit=\(Int.random(in: -2...3, using: &rng))&feed=longpoll&timeout=10&since=\(pieces.randomElement(using: &rng) ?? "")" : "")
                let body = bodies.randomElement(using: &rng)
                do {
                    let reply = try await h.request(method, path, body: body)
                    statuses[reply.status, default: 0] += 1
                    #expect(reply.status < 500 || reply.status == 501, "\(method) \(path) \(body ?? ""): \(reply.status) \(reply.body)")
                } catch let error as HTTPClientError where [.remoteConnectionClosed, .readTimeout, .connectTimeout, .deadlineExceeded].contains(error) {
                    Issue.record("\(method) \(path): the server dropped or stalled the request: \(error)")
                } catch {
                    statuses[-1, default: 0] += 1  // a request the client itself could not send (bad URL)
                }
            }
            #expect(statuses[-1, default: 0] < 1000, "most requests must reach the server: \(statuses)")
            // Oversized headers and bodies.
            let huge = try await h.request(.GET, "/db", headers: [("X-Big", String(repeating: "h", count: 200_000))])
            #expect(huge.status == 400 || huge.status == 431)
            #expect(try await h.request(.GET, "/")["uuid"]?.string == h.node.uuid)
            for i in 0..<20 { #expect(try await h.request(.GET, "/db/keep\(i)")["i"]?.int == Int64(i)) }
            let db = try #require(try h.node.database("db"))
            let integrity = try db.read { db in try String.fetchOne(db, sql: "PRAGMA integrity_check") }
            #expect(integrity == "ok")
            let blobs = try FileManager.default.contentsOfDirectory(atPath: db.path.appendingPathComponent("blobs").path)
            // Blobs, their MD5 sidecars (kept once a blob's wire digest was asked for) and temporary files only.
            #expect(blobs.allSatisfy { $0.hasSuffix(".blob") || $0.hasSuffix(".blob.md5") || $0.hasPrefix(".tmp-") }, "\(blobs)")
        }
    }
}
