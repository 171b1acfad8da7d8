import Foundation
import Testing
@testable import SyncNodeStore
@testable import SyncNodeSync

/// Answers that carry documents are written as they are read, and bodies over 256 KiB take the
/// path that measures them first and waits for the memory budget: each endpoint must still send
/// every such body whole and right, also when the budget is smaller than a body and several
/// readers share it.
@Suite struct StreamedAnswerTests {
    /// A text of `size` bytes that differs for each `seed`.
    static func text(_ seed: Int, size: Int) -> String {
        String(repeating: "\(seed)abcdefghij", count: size / 11 + 1)
    }

    /// A listener whose budget (1 MiB) is below two large bodies, with large and small documents
    /// (`big0`...`big2` of 600 KB, `small`), a deleted one and `twin`, a large document in conflict.
    static func harness(maxRequestBodySize: Int = 64 << 20, tls: Bool = true, idleTimeout: Duration = .seconds(60)) async throws -> ListenerHarness {
        let h = try await ListenerHarness(
            tls: tls, idleTimeout: idleTimeout, maxRequestBodySize: maxRequestBodySize, answerMemoryBudget: 1 << 20)
        let c = try #require(try h.node.database("db", create: true)).defaultCollection()
        for i in 0..<3 { try c.save(try MutableDocument(id: "big\(i)", data: ["kind": "big", "text": text(i, size: 600_000)])) }
        try c.save(try MutableDocument(id: "small", data: ["kind": "small", "text": "s"]))
        try c.save(try MutableDocument(id: "gone", data: ["kind": "small"]))
        try c.delete(id: "gone")
        let docs = (1...2).map { n in
            #"{"_id":"twin","_rev":"1-\#(String(repeating: "\(n)", count: 32))","kind":"big","text":"\#(text(10 + n, size: 400_000))"}"#
        }
        let reply = try await h.request(.POST, "/db/_bulk_docs", body: #"{"new_edits":false,"docs":[\#(docs.joined(separator: ","))]}"#)
        #expect(reply.status == 201)
        return h
    }

    static func expectedText(_ id: String, rev: String? = nil) -> String? {
        switch id {
        case "big0", "big1", "big2": text(Int(id.dropFirst(3))!, size: 600_000)
        case "small": "s"
        case "twin": text(10 + Int(String(rev?.dropFirst(2).prefix(1) ?? "0"))!, size: 400_000)
        default: nil
        }
    }

    /// True when `doc` is the document its `_id` and `_rev` name, whole.
    static func isWhole(_ doc: DocumentValue?) -> Bool {
        guard case .dictionary(let d)? = doc, let id = d["_id"]?.string, let rev = d["_rev"]?.string else { return false }
        return d["text"]?.string == expectedText(id, rev: rev)
    }

    @Test func everyEndpointSendsLargeBodiesWhole() async throws {
        let h = try await Self.harness()
        try await withCleanup({ await h.shutdown() }) {
            let all = try await h.request(.GET, "/db/_all_docs?include_docs=true")
            let rows = try #require(all["rows"]?.array)
            #expect(rows.count == 5 && all["total_rows"]?.int == 5)
            for row in rows { #expect(Self.isWhole(row["doc"]), "\(row["id"] ?? .null)") }

            let keyed = try await h.request(.POST, "/db/_all_docs?include_docs=true", body: #"{"keys":["big2","nope","gone","small"]}"#)
            let keyedRows = try #require(keyed["rows"]?.array)
            #expect(keyedRows.count == 4)
            #expect(Self.isWhole(keyedRows[0]["doc"]) && keyedRows[1]["error"] == "not_found")
            #expect(keyedRows[2]["value"]?["deleted"] == true && keyedRows[2]["doc"] == .null && Self.isWhole(keyedRows[3]["doc"]))

            let paged = try await h.request(.GET, "/db/_all_docs?include_docs=true&descending=true&skip=1&limit=2")
            #expect(paged["rows"]?.array?.compactMap { $0["id"]?.string } == ["small", "big2"])

            let changes = try await h.request(.GET, "/db/_changes?include_docs=true")
            let results = try #require(changes["results"]?.array)
            #expect(results.count == 6)
            for result in results where result["deleted"] != true { #expect(Self.isWhole(result["doc"])) }

            let feed = try await h.request(.GET, "/db/_changes?feed=continuous&include_docs=true&timeout=100")
            let lines = feed.body.split(separator: "\n").compactMap { try? DocumentValue(json: String($0)) }.filter { $0["seq"] != nil }
            #expect(lines.count == 6)
            for line in lines where line["deleted"] != true { #expect(Self.isWhole(line["doc"])) }

            let asked = #"{"docs":[{"id":"big1"},{"id":"twin"},{"id":"nope"},{"id":"small"}]}"#
            let bulk = try #require(try await h.request(.POST, "/db/_bulk_get?revs=true", body: asked)["results"]?.array)
            #expect(bulk.count == 4)
            #expect(Self.isWhole(bulk[0]["docs"]?.array?.first?["ok"]) && Self.isWhole(bulk[1]["docs"]?.array?.first?["ok"]))
            #expect(bulk[0]["docs"]?.array?.first?["ok"]?["_revisions"]?["start"] == 1)
            #expect(bulk[2]["docs"]?.array?.first?["error"]?["error"] == "not_found" && Self.isWhole(bulk[3]["docs"]?.array?.first?["ok"]))

            let found = try await h.request(.POST, "/db/_find", body: #"{"selector":{"kind":"big"}}"#)
            let docs = try #require(found["docs"]?.array)
            #expect(docs.count == 4 && docs.allSatisfy { Self.isWhole($0) })
            let projected = try await h.request(.POST, "/db/_find", body: #"{"selector":{"kind":"big"},"fields":["_id","kind"]}"#)
            #expect(projected["docs"]?.array?.allSatisfy { $0["text"] == nil && $0["kind"] == "big" } == true)

            let single = try await h.request(.GET, "/db/big1?revs_info=true")
            #expect(Self.isWhole(single.json) && single["_revs_info"]?.array?.first?["status"] == "available")

            let leaves = try #require(try await h.request(.GET, "/db/twin?open_revs=all&revs=true").json.array)
            #expect(leaves.count == 2 && leaves.allSatisfy { Self.isWhole($0["ok"]) })
            let multipart = try await h.request(.GET, "/db/twin?open_revs=all", headers: [("Accept", "multipart/mixed")])
            #expect(multipart.status == 200 && multipart.headers["content-type"]?.hasPrefix("multipart/mixed") == true)
            #expect(multipart.body.contains(Self.text(11, size: 400_000)) && multipart.body.contains(Self.text(12, size: 400_000)))
        }
    }

    @Test func readersSharingASmallBudgetEachGetEverything() async throws {
        let h = try await Self.harness()
        try await withCleanup({ await h.shutdown() }) {
            try await withThrowingTaskGroup(of: Bool.self) { group in
                for n in 0..<4 {
                    group.addTask {
                        let path = n % 2 == 0 ? "/db/_all_docs?include_docs=true" : "/db/_changes?include_docs=true"
                        let reply = try await h.request(.GET, path)
                        let rows = reply["rows"]?.array ?? reply["results"]?.array ?? []
                        return rows.count >= 5 && rows.filter { $0["deleted"] != true }.allSatisfy { Self.isWhole($0["doc"]) }
                    }
                }
                for try await whole in group { #expect(whole) }
            }
        }
    }

    /// SQL++ results are built whole, so they are bounded (by the request body limit): beyond it,
    /// 400 with what to do, and nothing held.
    /// A result larger than any request body (and than the budget) is answered whole, every row
    /// right; a failing query still gets its error rather than a cut answer; no file is left.
    @Test func aQueryResultLargerThanTheBodyLimitIsAnsweredWhole() async throws {
        let h = try await Self.harness(maxRequestBodySize: 1 << 20)
        try await withCleanup({ await h.shutdown() }) {
            let all = try await h.request(.POST, "/db/_query", body: #"{"query":"SELECT meta().id AS id, text FROM _ ORDER BY meta().id"}"#)
            #expect(all.status == 200)
            let rows = try #require(all["results"]?.array)
            #expect(rows.compactMap { $0["id"]?.string } == ["big0", "big1", "big2", "small", "twin"])
            for row in rows where row["id"]?.string != "twin" {
                #expect(row["text"]?.string == Self.expectedText(row["id"]?.string ?? ""), "\(row["id"] ?? .null)")
            }
            let empty = try await h.request(.POST, "/db/_query", body: #"{"query":"SELECT * FROM _ WHERE kind = 'none'"}"#)
            #expect(empty.status == 200 && empty["results"] == [])
            let failing = try await h.request(.POST, "/db/_query", body: #"{"query":"SELECT REGEXP_LIKE(kind, '(') FROM _"}"#)
            #expect(failing.status == 400 && failing["error"] == "query_parse_error")
            let database = try #require(try h.node.database("db"))
            // Past its limit (4 GiB in the listener) a result is refused, with a way to narrow it.
            let query = try database.createQuery("SELECT * FROM _")
            let usage = QuerySpill.Usage()
            do {
                _ = try await QuerySpill.run(query, in: database.path, limit: 1_000_000, usage: usage)
                Issue.record("a result past the limit was not refused")
            } catch let error as CouchError {
                #expect(error.status == 413 && error.reason.contains("LIMIT and OFFSET"))
            }
            #expect(usage.held == 0)
            // Results being written share the limit: one that fits alone waits while another holds it.
            var first: QuerySpill? = try await QuerySpill.run(query, in: database.path, limit: 3_000_000, usage: usage)
            #expect(usage.held == first?.size && usage.held > 1_500_000)
            do {
                _ = try await QuerySpill.run(query, in: database.path, limit: 3_000_000, usage: usage)
                Issue.record("two results past the shared limit were both kept")
            } catch let error as CouchError {
                #expect(error.status == 503 && error.reason.contains("retry later"))
            }
            first = nil
            #expect(usage.held == 0)
            #expect(try await QuerySpill.run(query, in: database.path, limit: 3_000_000, usage: usage).size > 1_500_000)
            #expect(try FileManager.default.contentsOfDirectory(atPath: database.path.path).filter { $0.hasPrefix(".query-") } == [])
        }
    }
}
