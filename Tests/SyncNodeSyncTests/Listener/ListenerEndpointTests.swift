import Crypto
import Foundation
import NIOHTTP1
import Testing
@testable import SyncNodeStore
@testable import SyncNodeSync

@Suite struct ListenerEndpointTests {
    @Test func welcomeDatabasesAndDocuments() async throws {
        let h = try await ListenerHarness()
        try await withCleanup({ await h.shutdown() }) {
            let welcome = try await h.request(.GET, "/")
            #expect(welcome.status == 200 && welcome["uuid"]?.string == h.node.uuid)
            #expect(welcome.headers["content-type"] == "application/json")

            #expect(try await h.request(.PUT, "/db").status == 201)
            #expect(try await h.request(.PUT, "/db").status == 412)
            #expect(try await h.request(.GET, "/nope").status == 404)
            #expect(try await h.request(.GET, "/_all_dbs").json == ["db"])

            let created = try await h.request(.PUT, "/db/doc%2F1", body: #"{"a":1,"s":"é"}"#)
            #expect(created.status == 201)
            let rev1 = try #require(created["rev"]?.string)
            #expect(created.headers["etag"] == "\"\(rev1)\"")
            let got = try await h.request(.GET, "/db/doc%2F1")
            #expect(got["_id"]?.string == "doc/1" && got["s"]?.string == "é" && got["_rev"]?.string == rev1)
            #expect(try await h.request(.GET, "/db/doc%2F1", headers: [("If-None-Match", "\"\(rev1)\"")]).status == 304)
            #expect(try await h.request(.HEAD, "/db/doc%2F1").headers["etag"] == "\"\(rev1)\"")

            // Conflicts: no rev, stale rev.
            #expect(try await h.request(.PUT, "/db/doc%2F1", body: #"{"a":2}"#).status == 409)
            let updated = try await h.request(.PUT, "/db/doc%2F1?rev=\(rev1)", body: #"{"a":2}"#)
            #expect(updated.status == 201)
            let rev2 = try #require(updated["rev"]?.string)
            #expect(try await h.request(.PUT, "/db/doc%2F1", body: #"{"_rev":"\#(rev1)","a":3}"#)["error"]?.string == "conflict")

            let withHistory = try await h.request(.GET, "/db/doc%2F1?revs=true")
            #expect(withHistory["_revisions"]?["start"]?.int == 2)
            #expect(withHistory["_revisions"]?["ids"]?.array?.count == 2)
            // The replaced revision's body is not kept: missing, as in CouchDB after compaction.
            let old = try await h.request(.GET, "/db/doc%2F1?rev=\(rev1)")
            #expect(old.status == 404 && old["reason"]?.string == "missing", "\(old.body)")
            #expect(try await h.request(.GET, "/db/doc%2F1?rev=\(rev2)")["a"]?.int == 2)

            let info = try await h.request(.GET, "/db")
            #expect(info["doc_count"]?.int == 1 && info["update_seq"]?.int == 2 && info["instance_start_time"]?.string == "0")

            let deleted = try await h.request(.DELETE, "/db/doc%2F1?rev=\(rev2)")
            #expect(deleted.status == 200 && deleted["rev"]?.string?.hasPrefix("3-") == true)
            #expect(try await h.request(.GET, "/db")["doc_del_count"]?.int == 1)
            #expect(try await h.request(.GET, "/db/doc%2F1").status == 404)
            #expect(try await h.request(.DELETE, "/db/doc%2F1").status == 409)

            let posted = try await h.request(.POST, "/db", body: #"{"x":true}"#)
            #expect(posted.status == 201 && posted["id"]?.string?.isEmpty == false)

            #expect(try await h.request(.DELETE, "/db").status == 200)
            #expect(try await h.request(.GET, "/db").status == 404)
        }
    }

    /// `/_uuids` (and so POSTed documents' IDs and multipart boundaries): 32 lowercase hex
    /// digits, CouchDB's spelling, all different.
    @Test func uuidsAreThirtyTwoRandomHexDigits() async throws {
        let h = try await ListenerHarness()
        try await withCleanup({ await h.shutdown() }) {
            let reply = try await h.request(.GET, "/_uuids?count=50")
            guard case .array(let values)? = reply["uuids"] else { Issue.record("no uuids: \(reply.body)"); return }
            let ids = values.compactMap(\.string)
            #expect(ids.count == 50 && Set(ids).count == 50)
            #expect(ids.allSatisfy { $0.utf8.count == 32 && $0.utf8.allSatisfy { Hex.digits.contains($0) } }, "\(ids)")
        }
    }

    /// Mango `_find` with `_index`, as PouchDB-find and aiocouch use them.
    @Test func findAndIndexes() async throws {
        let h = try await ListenerHarness()
        try await withCleanup({ await h.shutdown() }) {
            _ = try await h.request(.PUT, "/db")
            let docs = (0..<40).map { i in #"{"_id":"p\#(i)","type":"\#(i % 2 == 0 ? "even" : "odd")","n":\#(i),"meta":{"tag":"t\#(i % 3)"}}"# }
            #expect(try await h.request(.POST, "/db/_bulk_docs", body: #"{"docs":[\#(docs.joined(separator: ","))]}"#).status == 201)

            let unindexed = try await h.request(.POST, "/db/_find", body: #"{"selector":{"n":{"$gte":30}},"fields":["_id","meta.tag"],"sort":[{"n":"desc"}],"limit":3}"#)
            #expect(unindexed.status == 200)
            #expect(unindexed["docs"] == [["_id": "p39", "meta": ["tag": "t0"]], ["_id": "p38", "meta": ["tag": "t2"]], ["_id": "p37", "meta": ["tag": "t1"]]])
            #expect(unindexed["warning"]?.string?.contains("No matching index") == true)

            let created = try await h.request(.POST, "/db/_index", body: #"{"index":{"fields":["type","n"]},"name":"by-type"}"#)
            #expect(created["result"] == "created" && created["id"] == "_design/by-type")
            #expect(try await h.request(.POST, "/db/_index", body: #"{"index":{"fields":["type","n"]},"name":"by-type"}"#)["result"] == "exists")
            let listed = try await h.request(.GET, "/db/_index")
            #expect(listed["total_rows"] == 2)
            #expect(listed["indexes"]?.array?.last?["def"] == ["fields": [["type": "asc"], ["n": "asc"]]])

            // Pages through a bookmark; the index serves the query (no warning).
            var seen: [String] = []
            var bookmark: DocumentValue = .null
            for _ in 0..<3 {
                let page = try await h.request(.POST, "/db/_find", body: #"{"selector":{"type":"odd","n":{"$gt":10}},"limit":5,"bookmark":\#(bookmark.toJSON()),"execution_stats":true}"#)
                #expect(page["warning"] == nil)
                #expect(page["execution_stats"]?["results_returned"] != nil)
                seen += (page["docs"]?.array ?? []).compactMap { $0["_id"]?.string }
                bookmark = page["bookmark"] ?? .null
            }
            #expect(seen == (11..<40).filter { $0 % 2 == 1 }.map { "p\($0)" }.sorted().prefix(15).map { $0 })

            for bad in [#"{"selector":{"n":{"$nope":1}}}"#, #"{"fields":["a"]}"#, #"{"selector":{"n":1},"limit":"x"}"#,
                        #"{"selector":{},"skip":9223372036854775807,"bookmark":"MQ=="}"#] {
                let reply = try await h.request(.POST, "/db/_find", body: bad)
                #expect(reply.status == 400 && reply["error"] != nil && reply["reason"] != nil, "\(bad)")
            }
            // A selector index lists as CouchDB lists a partial index, serves the filtered feed, and
            // goes by the listing's DELETE path.
            let odd = try #require(try h.node.database("db")).defaultCollection()
            try odd.createIndex(SelectorIndexConfiguration(["type": "odd"]), name: "odd")
            let partial = try await h.request(.GET, "/db/_index")["indexes"]?.array?.first { $0["name"] == "odd" }
            #expect(partial?["type"] == "json" && partial?["def"] == ["fields": [], "partial_filter_selector": ["type": "odd"]])
            let feed = try await h.request(.POST, "/db/_changes?filter=_selector", body: #"{"selector":{"type":"odd"}}"#)
            #expect(feed["results"]?.array?.count == 20)
            #expect(try await h.request(.DELETE, "/db/_index/_design/odd/json/odd").status == 200)
            #expect(try await h.request(.DELETE, "/db/_index/_design/by-type/json/by-type").status == 200)
            #expect(try await h.request(.DELETE, "/db/_index/_design/by-type/json/by-type").status == 404)
            #expect(try await h.request(.GET, "/db/_index")["total_rows"] == 1)
        }
    }

    /// `_replicate` between two databases of this node, named or given as URLs of this node.
    @Test func replicateWithinOneNode() async throws {
        let h = try await ListenerHarness()
        try await withCleanup({ await h.shutdown() }) {
            _ = try await h.request(.PUT, "/a")
            #expect(try await h.request(.POST, "/a/_bulk_docs", body: #"{"docs":[{"_id":"x","v":1},{"_id":"y","v":2}]}"#).status == 201)
            let byName = try await h.request(.POST, "/_replicate", body: #"{"source":"a","target":"b","create_target":true}"#)
            #expect(byName.status == 200 && byName["ok"] == true, "\(byName.body)")
            #expect(try await h.request(.GET, "/b/y")["v"] == 2)

            #expect(try await h.request(.PUT, "/a/z", body: #"{"v":3}"#).status == 201)
            let byURL = #"{"source":"\#(h.base)/a","target":{"url":"\#(h.base)/c"},"create_target":true}"#
            let reply = try await h.request(.POST, "/_replicate", body: byURL)
            #expect(reply.status == 200 && reply["ok"] == true, "\(reply.body)")
            #expect(try await h.request(.GET, "/c/z")["v"] == 3)
            #expect(try await h.request(.GET, "/c/x")["v"] == 1)
            // A name that only looks like a loopback address, or a path below the database, is not this node.
            let lookalike = #"{"source":"https://127.evil.example:\#(h.listener.port ?? 0)/a","target":"https://192.0.2.1:1/b"}"#
            #expect(try await h.request(.POST, "/_replicate", body: lookalike).status == 400)
            // An unreachable peer is the peer's failure: 502, naming it.
            let unreachable = try await h.request(.POST, "/_replicate", body: #"{"source":"a","target":"https://127.0.0.1:1/x"}"#)
            #expect(unreachable.status == 502 && unreachable["reason"]?.string?.contains("127.0.0.1") == true, "\(unreachable.body)")
            // Two URLs elsewhere still need one end here.
            let elsewhere = #"{"source":"https://192.0.2.1:1/a","target":"https://192.0.2.1:1/b"}"#
            #expect(try await h.request(.POST, "/_replicate", body: elsewhere).status == 400)
        }
    }

    @Test func revsInfoListsTheWinnersPath() async throws {
        let h = try await ListenerHarness()
        try await withCleanup({ await h.shutdown() }) {
            _ = try await h.request(.PUT, "/db")
            let first = try #require(try await h.request(.PUT, "/db/d", body: #"{"v":1}"#)["rev"]?.string)
            let second = try #require(try await h.request(.PUT, "/db/d", body: #"{"v":2,"_rev":"\#(first)"}"#)["rev"]?.string)
            // The replaced revision's body is not kept (as in CouchDB after compaction).
            let info = try await h.request(.GET, "/db/d?revs_info=true")["_revs_info"]
            #expect(info == [["rev": .string(second), "status": "available"], ["rev": .string(first), "status": "missing"]])
            #expect(try await h.request(.GET, "/db/d?rev=\(first)").status == 404)
            // With ?rev= it is not given, as CouchDB does.
            #expect(try await h.request(.GET, "/db/d?revs_info=true&rev=\(second)")["_revs_info"] == nil)
        }
    }

    /// CouchDB's replicator asks `open_revs` for multipart/mixed, never for attachments, and must get them.
    @Test func openRevsAnswersMultipartMixedWithAttachments() async throws {
        let h = try await ListenerHarness()
        try await withCleanup({ await h.shutdown() }) {
            _ = try await h.request(.PUT, "/db")
            let put = try await h.request(.PUT, "/db/d", body: #"{"a":1,"_attachments":{"x.bin":{"content_type":"application/octet-stream","data":"AAEC"}}}"#)
            let rev = try #require(put["rev"]?.string)
            let reply = try await h.request(.GET, "/db/d?revs=true&open_revs=" + #"["\#(rev)","9-abc"]"#.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!,
                                            headers: [("Accept", "multipart/mixed")])
            #expect(reply.status == 200)
            let type = try #require(reply.headers["content-type"])
            #expect(type.hasPrefix("multipart/mixed; boundary=\""))
            let boundary = String(type.split(separator: "\"")[1])
            let parts = reply.body.components(separatedBy: "--\(boundary)").dropFirst().map { $0 }
            #expect(parts.count == 3 && parts.last == "--")
            // The revision with its attachment: multipart/related, the JSON (attachment marked follows), then the raw bytes.
            let related = parts[0]
            #expect(related.hasPrefix("\r\nContent-Type: multipart/related; boundary=\""))
            let inner = String(related.split(separator: "\"")[1])
            let sections = related.components(separatedBy: "--\(inner)")
            #expect(sections.count == 4 && sections[3].hasPrefix("--"))
            #expect(sections[1].hasPrefix("\r\nContent-Type: application/json\r\n\r\n"))
            let json = try DocumentValue(json: String(sections[1].dropFirst("\r\nContent-Type: application/json\r\n\r\n".count)).trimmingCharacters(in: .whitespacesAndNewlines))
            #expect(json["_attachments"]?["x.bin"]?["follows"] == true && json["_attachments"]?["x.bin"]?["data"] == nil)
            #expect(json["_attachments"]?["x.bin"]?["digest"] == "md5-uV9n9h67A2GWIteY9F/C0w==")
            #expect(json["_attachments"]?["x.bin"]?["revpos"] == 1)
            let header = "\r\nContent-Disposition: attachment; filename=\"x.bin\"\r\nContent-Type: application/octet-stream\r\nContent-Length: 3\r\n\r\n"
            #expect(sections[2].hasPrefix(header))
            let marker = Array(header.utf8)
            let at = try #require((0...(reply.bytes.count - marker.count)).first { reply.bytes[$0..<($0 + marker.count)].elementsEqual(marker) })
            #expect(Array(reply.bytes[(at + marker.count)..<(at + marker.count + 3)]) == [0, 1, 2])
            // The revision this node lacks is an error part.
            #expect(parts[1].hasPrefix("\r\nContent-Type: application/json; error=\"true\"\r\n\r\n{\"missing\":\"9-abc\"}"))
        }
    }

    /// Input the listener once misread: each refused with a JSON error, nothing made or stored.
    @Test func malformedSinceNamesAndBodiesAreRefused() async throws {
        let h = try await ListenerHarness()
        try await withCleanup({ await h.shutdown() }) {
            _ = try await h.request(.PUT, "/db")
            for i in 1...3 { _ = try await h.request(.PUT, "/db/d\(i)", body: "{}") }
            // `since`: negative is malformed; past the end is the end (a checkpoint never overshoots).
            for bad in ["-1", "-5", "x", ""] {
                let reply = try await h.request(.GET, "/db/_changes?since=\(bad)")
                #expect(reply.status == 400 && reply["error"] == "bad_request", "since=\(bad)")
            }
            #expect(try await h.request(.GET, "/db/_changes?since=10")["last_seq"] == 3)
            #expect(try await h.request(.GET, "/db/_changes?since=1")["results"]?.array?.count == 2)
            #expect(try await h.request(.GET, "/db/_changes?since=2-g1AAAA")["results"]?.array?.count == 1)
            // A refused collection name leaves no database behind.
            for bad in ["x..", "y.s.", "z._x.c"] {
                #expect(try await h.request(.PUT, "/\(bad)").status == 400, "\(bad)")
            }
            #expect(try await h.request(.GET, "/_all_dbs").json == ["db"])
            // Methods and paths.
            let uuids = try await h.request(.POST, "/_uuids", body: "{}")
            #expect(uuids.status == 405 && uuids["error"] == "method_not_allowed")
            let empty = try await h.request(.PUT, "/db//etc/passwd", body: "{}")
            #expect(empty.status == 400 && empty["error"] == "bad_request")
            #expect(try await h.request(.GET, "/db/etc").status == 404)
            #expect(try await h.request(.GET, "/db/").status == 200)  // one trailing slash is fine
            // Invalid UTF-8 (a lone surrogate's bytes, a stray continuation byte) in a body or a key.
            for bytes: [UInt8] in [Array(#"{"a":""#.utf8) + [0xED, 0xA0, 0x80] + Array(#""}"#.utf8), Array(#"{""#.utf8) + [0x80] + Array(#"":1}"#.utf8)] {
                let reply = try await h.request(.PUT, "/db/u", bytes: bytes, headers: [("Content-Type", "application/json")])
                #expect(reply.status == 400 && reply["error"] == "bad_request")
            }
            #expect(try await h.request(.GET, "/db/u").status == 404)
            // _local documents: ids and revisions are checked as for other documents.
            for (id, rev) in [("a%00b", "0-1"), ("ok", "x"), ("ok", "1-"), ("ok", "99999999999999999999-1")] {
                let reply = try await h.request(.PUT, "/db/_local/\(id)?rev=\(rev)", body: #"{"v":1}"#)
                #expect(reply.status == 400, "\(id) \(rev): \(reply.body)")
            }
            #expect(try await h.request(.PUT, "/db/_local/ok", body: #"{"v":1}"#)["rev"] == "0-1")
            #expect(try await h.request(.PUT, "/db/_local/ok?rev=0-1", body: #"{"v":2}"#)["rev"] == "0-2")
        }
    }

    @Test func badInputGetsCouchErrors() async throws {
        let h = try await ListenerHarness()
        try await withCleanup({ await h.shutdown() }) {
            _ = try await h.request(.PUT, "/db")
            let cases: [(HTTPMethod, String, String?, Int, String)] = [
                (.PUT, "/db/x", "{not json", 400, "bad_request"),
                (.PUT, "/db/x", "[1,2]", 400, "bad_request"),
                (.PUT, "/db/x", #"{"_secret":1}"#, 400, "doc_validation"),
                (.PUT, "/db/_design%2Fx", "{}", 404, "not_found"),
                (.PUT, "/Bad.Name.Here.Too", nil, 400, "illegal_database_name"),
                (.GET, "/db/missing", nil, 404, "not_found"),
                (.PATCH, "/db/x", "{}", 405, "method_not_allowed"),
                (.GET, "/db/_bulk_docs", nil, 405, "method_not_allowed"),
                (.POST, "/db/_bulk_docs", #"{"nodocs":1}"#, 400, "bad_request"),
                (.GET, "/db/_changes?feed=sideways", nil, 400, "bad_request"),
                (.GET, "/db/_changes?since=abc", nil, 400, "bad_request"),
                (.GET, "/db/_all_docs?limit=-1", nil, 400, "bad_request"),
                (.GET, "/db/x/..%2F..%2Fetc%2Fpasswd", nil, 404, "not_found"),
                (.GET, "/_nothing", nil, 404, "not_found"),
            ]
            for (method, path, body, status, error) in cases {
                let reply = try await h.request(method, path, body: body)
                #expect(reply.status == status, "\(method) \(path): \(reply.status) \(reply.body)")
                #expect(reply["error"]?.string == error, "\(method) \(path): \(reply.body)")
                #expect(reply["reason"]?.string?.isEmpty == false)
                #expect(reply.headers["content-type"] == "application/json")
            }
        }
    }

    @Test func replicationEndpoints() async throws {
        let h = try await ListenerHarness()
        try await withCleanup({ await h.shutdown() }) {
            _ = try await h.request(.PUT, "/db")
            // A replicator's upload: revisions made elsewhere, with history, creating a conflict.
            let upload = #"""
            {"new_edits": false, "docs": [
              {"_id": "d", "_rev": "1-aaa", "v": 1},
              {"_id": "d", "_rev": "3-ccc", "_revisions": {"start": 3, "ids": ["ccc", "bbb", "aaa"]}, "v": 3},
              {"_id": "d", "_rev": "2-zzz", "_revisions": {"start": 2, "ids": ["zzz", "aaa"]}, "v": 2},
              {"_id": "gone", "_rev": "2-del", "_deleted": true, "_revisions": {"start": 2, "ids": ["del", "one"]}}
            ]}
            """#
            let bulk = try await h.request(.POST, "/db/_bulk_docs", body: upload)
            #expect(bulk.status == 201 && bulk.json == [])
            let doc = try await h.request(.GET, "/db/d?conflicts=true")
            #expect(doc["_rev"]?.string == "3-ccc" && doc["_conflicts"] == ["2-zzz"])
            let diff = try await h.request(.POST, "/db/_revs_diff", body: #"{"d": ["3-ccc", "4-ddd"], "new": ["1-x"]}"#)
            #expect(diff["d"]?["missing"] == ["4-ddd"])
            #expect(diff["new"]?["missing"] == ["1-x"])
            let get = try await h.request(.POST, "/db/_bulk_get?revs=true&latest=true",
                                          body: #"{"docs": [{"id": "d", "rev": "2-zzz"}, {"id": "d"}, {"id": "missing"}]}"#)
            let results = try #require(get["results"]?.array)
            #expect(results[0]["docs"]?.array?.first?["ok"]?["_revisions"]?["ids"] == ["zzz", "aaa"])
            #expect(results[1]["docs"]?.array?.first?["ok"]?["_rev"]?.string == "3-ccc")
            #expect(results[2]["docs"]?.array?.first?["error"]?["error"]?.string == "not_found")
            let open = try await h.request(.GET, "/db/d?open_revs=all&revs=true")
            #expect(Set(open.json.array?.compactMap { $0["ok"]?["_rev"]?.string } ?? []) == ["3-ccc", "2-zzz"])
            let some = try await h.request(.GET, "/db/d?open_revs=%5B%222-zzz%22%2C%229-nope%22%5D")
            #expect(some.json.array?.count == 2 && some.json.array?[1]["missing"]?.string == "9-nope")

            let changes = try await h.request(.GET, "/db/_changes?style=all_docs")
            let rows = try #require(changes["results"]?.array)
            #expect(rows.count == 2)
            #expect(Set(rows[0]["changes"]?.array?.compactMap { $0["rev"]?.string } ?? []) == ["3-ccc", "2-zzz"])
            #expect(rows[1]["deleted"] == true)
            #expect(changes["last_seq"]?.int == rows.last?["seq"]?.int)

            // Checkpoints are stored verbatim.
            let checkpoint = #"{"session_id":"s1","source_last_seq":"12-opaque","history":[{"a":1}]}"#
            #expect(try await h.request(.PUT, "/db/_local/repl%2Fid", body: checkpoint).status == 201)
            let local = try await h.request(.GET, "/db/_local/repl%2Fid")
            #expect(local["source_last_seq"]?.string == "12-opaque" && local["_id"]?.string == "_local/repl/id")
            #expect(try await h.request(.POST, "/db/_ensure_full_commit", body: "{}").status == 201)
            #expect(try await h.request(.GET, "/db/_changes").body.contains("repl") == false)
        }
    }

    @Test func allDocsRangesAndKeys() async throws {
        let h = try await ListenerHarness()
        try await withCleanup({ await h.shutdown() }) {
            _ = try await h.request(.PUT, "/db")
            let docs = (0..<10).map { #"{"_id":"k\#($0)","n":\#($0)}"# }.joined(separator: ",")
            _ = try await h.request(.POST, "/db/_bulk_docs", body: #"{"docs":[\#(docs)]}"#)
            let range = try await h.request(.GET, "/db/_all_docs?startkey=%22k2%22&endkey=%22k5%22&inclusive_end=false")
            #expect(range["rows"]?.array?.compactMap { $0["id"]?.string } == ["k2", "k3", "k4"])
            #expect(range["total_rows"]?.int == 10)
            let desc = try await h.request(.GET, "/db/_all_docs?descending=true&limit=2&include_docs=true")
            #expect(desc["rows"]?.array?.compactMap { $0["id"]?.string } == ["k9", "k8"])
            #expect(desc["rows"]?.array?.first?["doc"]?["n"]?.int == 9)
            let keys = try await h.request(.POST, "/db/_all_docs", body: #"{"keys":["k1","zz","k0"]}"#)
            #expect(keys["rows"]?.array?.map { $0["id"]?.string ?? $0["error"]?.string } == ["k1", "not_found", "k0"])
            #expect(Set((keys.json["rows"]?.array?.first?.dictionaryKeys) ?? []) == ["id", "key", "value"])
        }
    }

    @Test func queryRunsSQLPlusPlus() async throws {
        let h = try await ListenerHarness()
        try await withCleanup({ await h.shutdown() }) {
            _ = try await h.request(.PUT, "/db")
            let docs = (0..<10).map { #"{"_id":"k\#($0)","n":\#($0),"odd":\#($0 % 2 == 1)}"# }.joined(separator: ",")
            _ = try await h.request(.POST, "/db/_bulk_docs", body: #"{"docs":[\#(docs)]}"#)
            let result = try await h.request(.POST, "/db/_query",
                                             body: #"{"query": "SELECT meta().id, n FROM _ WHERE odd AND n > $min ORDER BY n DESC", "params": {"min": 4}}"#)
            #expect(result.status == 200)
            #expect(result["results"]?.array?.compactMap { $0["id"]?.string } == ["k9", "k7", "k5"])
            // Parameter names as the query spells them work too.
            let dollar = try await h.request(.POST, "/db/_query", body: #"{"query": "SELECT n FROM _ WHERE n > $min", "params": {"$min": 7}}"#)
            #expect(dollar["results"]?.array?.compactMap { $0["n"]?.int }.sorted() == [8, 9])
            let bad = try await h.request(.POST, "/db/_query", body: #"{"query": "SELECT n FROM"}"#)
            #expect(bad.status == 400 && bad["error"]?.string == "query_parse_error")
            #expect(bad["reason"]?.string?.contains("position 13") == true)
            let missing = try await h.request(.POST, "/db/_query", body: #"{"sql": "SELECT 1"}"#)
            #expect(missing.status == 400)
        }
    }

    /// A standalone attachment streams into the blob store and back out: beyond the JSON body
    /// limit, up to its own, with nothing left behind by one that is too large.
    @Test func standaloneAttachmentsStreamBeyondTheBodyLimit() async throws {
        let h = try await ListenerHarness(maxRequestBodySize: 1 << 20, maxAttachmentSize: 4 << 20)
        try await withCleanup({ await h.shutdown() }) {
            _ = try await h.request(.PUT, "/db")
            var rng = SystemRandomNumberGenerator()
            let bytes = (0..<(3 << 20)).map { _ in UInt8.random(in: 0...255, using: &rng) }
            let put = try await h.request(.PUT, "/db/d/big.bin", bytes: bytes, headers: [("Content-Type", "application/octet-stream")])
            #expect(put.status == 201, "\(put.body)")
            let rev = try #require(put["rev"]?.string)
            let got = try await h.request(.GET, "/db/d/big.bin")
            #expect(got.status == 200 && got.bytes == bytes && got.headers["content-length"] == "\(bytes.count)")
            let head = try await h.request(.HEAD, "/db/d/big.bin")
            #expect(head.status == 200 && head.bytes.isEmpty && head.headers["content-length"] == "\(bytes.count)")
            let md5 = "md5-" + Data(Insecure.MD5.hash(data: bytes)).base64EncodedString()
            let stub = try await h.request(.GET, "/db/d")
            #expect(stub["_attachments"]?["big.bin"]?["length"]?.int == Int64(bytes.count))
            #expect(stub["_attachments"]?["big.bin"]?["digest"]?.string == md5)

            // Over the attachment limit: 413, the document unchanged, no partial file left.
            let tooBig = try await h.request(.PUT, "/db/d/huge.bin?rev=\(rev)", bytes: [UInt8](repeating: 7, count: 5 << 20),
                                             headers: [("Content-Type", "application/octet-stream")])
            #expect(tooBig.status == 413 && tooBig["error"] == "too_large")
            #expect(try await h.request(.GET, "/db/d")["_rev"]?.string == rev)
            let blobs = h.directory.appendingPathComponent("db.syncnode/blobs")
            let names = try FileManager.default.contentsOfDirectory(atPath: blobs.path)
            #expect(!names.contains { $0.hasPrefix(".tmp-") }, "\(names)")
            // JSON bodies keep their limit.
            let json = #"{"v":""# + String(repeating: "x", count: 2 << 20) + #""}"#
            #expect(try await h.request(.PUT, "/db/j", body: json).status == 413)
        }
    }

    @Test func attachmentsInlineStubsAndStandalone() async throws {
        let h = try await ListenerHarness()
        try await withCleanup({ await h.shutdown() }) {
            _ = try await h.request(.PUT, "/db")
            let data = Data("attachment bytes".utf8).base64EncodedString()
            let created = try await h.request(.PUT, "/db/d", body: #"{"_attachments":{"a.txt":{"content_type":"text/plain","data":"\#(data)"}},"v":1}"#)
            #expect(created.status == 201)
            let rev1 = try #require(created["rev"]?.string)
            let stub = try await h.request(.GET, "/db/d")
            #expect(stub["_attachments"]?["a.txt"]?["stub"] == true)
            #expect(stub["_attachments"]?["a.txt"]?["length"]?.int == 16)
            let inline = try await h.request(.GET, "/db/d?attachments=true")
            #expect(inline["_attachments"]?["a.txt"]?["data"]?.string == data)
            // An update that keeps the attachment by stub.
            let updated = try await h.request(.PUT, "/db/d?rev=\(rev1)", body: #"{"_attachments":{"a.txt":{"stub":true}},"v":2}"#)
            #expect(updated.status == 201)
            let raw = try await h.request(.GET, "/db/d/a.txt")
            #expect(raw.body == "attachment bytes" && raw.headers["content-type"] == "text/plain")
            // A stub for an attachment that never existed.
            let rev2 = try #require(updated["rev"]?.string)
            #expect(try await h.request(.PUT, "/db/d?rev=\(rev2)", body: #"{"_attachments":{"b.txt":{"stub":true}}}"#).status == 412)
            // Standalone PUT with a path-like name, then DELETE.
            let put = try await h.request(.PUT, "/db/d/dir/b.bin?rev=\(rev2)", bytes: [0, 1, 2, 255], headers: [("Content-Type", "application/octet-stream")])
            #expect(put.status == 201)
            #expect(try await h.request(.GET, "/db/d/dir/b.bin").bytes == [0, 1, 2, 255])
            let rev3 = try #require(put["rev"]?.string)
            #expect(try await h.request(.DELETE, "/db/d/dir/b.bin?rev=\(rev3)").status == 200)
            #expect(try await h.request(.GET, "/db/d/dir/b.bin").status == 404)
            #expect(try await h.request(.GET, "/db/d/a.txt").status == 200)
            #expect(try await h.request(.PUT, "/db/d?rev=\(rev2)", body: #"{"_attachments":{"x":{"data":"!!notbase64"}}}"#).status == 400)
            // Documents with property blobs, saved through the API, show them as blob_/ attachments.
            let collection = try #require(try h.node.database("db")?.defaultCollection())
            let doc = MutableDocument(id: "blobby")
            doc.setBlob(Blob(contentType: "image/png", data: Data([1, 2, 3])), forKey: "photo")
            try collection.save(doc)
            let blobby = try await h.request(.GET, "/db/blobby")
            #expect(blobby["_attachments"]?["blob_/photo"]?["length"]?.int == 3)
            #expect(try await h.request(.GET, "/db/blobby/blob_%2Fphoto").body.utf8.count == 3)
        }
    }
}

extension DocumentValue {
    var dictionaryKeys: [String]? { if case .dictionary(let d) = self { return Array(d.keys) } else { return nil } }
}
