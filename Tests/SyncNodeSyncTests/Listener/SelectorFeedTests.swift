import Foundation
import Testing
@testable import SyncNodeStore
@testable import SyncNodeSync

/// `_changes?filter=_selector`, as CouchDB's and PouchDB's replicators send it: every feed type
/// passes exactly the changes whose winning revision the selector matches, and moves `last_seq`
/// past the ones it skipped.
@Suite struct SelectorFeedTests {
    /// 2,500 documents, every 100th an order of store "s\(i % 3)"; one order deleted, one edited away.
    static func fill(_ h: ListenerHarness) async throws {
        #expect(try await h.request(.PUT, "/db").status == 201)
        let docs: [DocumentValue] = (0..<2500).map { i in
            i % 100 == 0 ? ["_id": .string("d\(i)"), "type": "order", "store": .string("s\(i % 3)"), "n": .int(Int64(i))]
                : ["_id": .string("d\(i)"), "type": "note", "n": .int(Int64(i))]
        }
        #expect(try await h.request(.POST, "/db/_bulk_docs", body: (["docs": .array(docs)] as DocumentValue).toJSON()).status == 201)
        let deleted = try #require(try await h.request(.GET, "/db/d100")["_rev"]?.string)
        #expect(try await h.request(.DELETE, "/db/d100?rev=\(deleted)").status == 200)
        let edited = try #require(try await h.request(.GET, "/db/d200")["_rev"]?.string)
        #expect(try await h.request(.PUT, "/db/d200", body: #"{"_rev":"\#(edited)","type":"note"}"#).status == 201)
    }

    static let orders = (0..<25).map { "d\($0 * 100)" }.filter { $0 != "d100" && $0 != "d200" }

    static func ids(ofLines body: String) -> [String] {
        body.split(separator: "\n").compactMap { try? DocumentValue(json: String($0)) }.compactMap { $0["id"]?.string }
    }

    @Test func everyFeedPassesExactlyWhatTheSelectorMatches() async throws {
        let h = try await ListenerHarness()
        try await withCleanup({ await h.shutdown() }) {
            try await Self.fill(h)
            let end = try #require(try h.node.database("db")?.defaultCollection().lastSequence())
            let selector = #"{"selector":{"type":"order"}}"#
            let normal = try await h.request(.POST, "/db/_changes?filter=_selector", body: selector)
            #expect(normal.status == 200)
            #expect(normal["results"]?.array?.compactMap { $0["id"]?.string }.sorted() == Self.orders.sorted())
            #expect(normal["last_seq"]?.int == end)

            // Continuous, read in pages of 1000 that mostly match nothing.
            let continuous = try await h.request(.POST, "/db/_changes?feed=continuous&timeout=300&filter=_selector", body: selector)
            #expect(Self.ids(ofLines: continuous.body).sorted() == Self.orders.sorted())
            let last = continuous.body.split(separator: "\n").compactMap { try? DocumentValue(json: String($0)) }.last
            #expect(last?["last_seq"]?.int == end)

            // With include_docs, the bodies are the matching winners.
            let docs = try await h.request(.POST, "/db/_changes?filter=_selector&include_docs=true", body: #"{"selector":{"store":"s1","n":{"$gte":1000}}}"#)
            let rows = try #require(docs["results"]?.array)
            #expect(rows.compactMap { $0["id"]?.string } == ["d1000", "d1300", "d1600", "d1900", "d2200"])
            #expect(rows.allSatisfy { $0["doc"]?["type"]?.string == "order" && $0["doc"]?["store"]?.string == "s1" })

            // A tombstone passes only when the selector matches it, as in CouchDB.
            let withDeletions = try await h.request(.POST, "/db/_changes?filter=_selector", body: #"{"selector":{"$or":[{"_deleted":true},{"type":"order"}]}}"#)
            let withDeletionIDs = try #require(withDeletions["results"]?.array?.compactMap { $0["id"]?.string })
            #expect(withDeletionIDs.sorted() == (Self.orders + ["d100"]).sorted())
            #expect(withDeletions["results"]?.array?.first { $0["id"]?.string == "d100" }?["deleted"] == true)

            // `_id` is the document's ID; a limit cuts the feed and says what is left.
            let byID = try await h.request(.POST, "/db/_changes?filter=_selector&limit=3", body: #"{"selector":{"_id":{"$gt":"d2490","$lt":"d25"}}}"#)
            let limited = try #require(byID["results"]?.array)
            #expect(limited.compactMap { $0["id"]?.string } == ["d2491", "d2492", "d2493"])
            #expect(byID["last_seq"] == limited.last?["seq"])

            // A limit of 0 reads nothing, and says it covered nothing.
            let none = try await h.request(.POST, "/db/_changes?feed=continuous&timeout=100&limit=0&filter=_selector", body: selector)
            #expect(none.body.contains(#""last_seq":0"#), "\(none.body)")
        }
    }

    @Test func aLongPollWaitsForAMatchingChange() async throws {
        let h = try await ListenerHarness()
        try await withCleanup({ await h.shutdown() }) {
            try await Self.fill(h)
            let collection = try #require(try h.node.database("db")?.defaultCollection())
            let since = try collection.lastSequence()
            let poll = Task {
                try await h.request(.POST, "/db/_changes?feed=longpoll&since=\(since)&timeout=20000&filter=_selector", body: #"{"selector":{"type":"order"}}"#)
            }
            try await Task.sleep(for: .milliseconds(300))
            // A change that does not match leaves the poll waiting; the matching one answers it.
            try collection.save(try MutableDocument(id: "unrelated", data: ["type": "note"]))
            try await Task.sleep(for: .milliseconds(300))
            try collection.save(try MutableDocument(id: "new-order", data: ["type": "order"]))
            let reply = try await poll.value
            #expect(reply["results"]?.array?.compactMap { $0["id"]?.string } == ["new-order"])

            // Nothing matching until the timeout: empty, with last_seq past what it skipped, so
            // the next poll does not look at those changes again.
            try collection.save(try MutableDocument(id: "another-note", data: ["type": "note"]))
            let empty = try await h.request(.POST, "/db/_changes?feed=longpoll&since=\(since)&timeout=300&filter=_selector", body: #"{"selector":{"type":"nothing"}}"#)
            #expect(empty["results"]?.array?.isEmpty == true)
            #expect(empty["last_seq"]?.int == (try collection.lastSequence()))
        }
    }

    @Test func badFiltersAreRefusedWithAReason() async throws {
        let h = try await ListenerHarness()
        try await withCleanup({ await h.shutdown() }) {
            #expect(try await h.request(.PUT, "/db").status == 201)
            let noBody = try await h.request(.GET, "/db/_changes?filter=_selector")
            #expect(noBody.status == 400 && noBody["error"] == "bad_request")
            #expect(noBody["reason"]?.string?.contains("Selector") == true)
            let notObject = try await h.request(.POST, "/db/_changes?filter=_selector", body: #"{"selector":["type"]}"#)
            #expect(notObject.status == 400 && notObject["reason"] != nil)
            // A bad pattern is refused with the request, not on the first row it meets.
            _ = try await h.request(.POST, "/db", body: #"{"_id":"x","s":"text"}"#)
            let pattern = try await h.request(.POST, "/db/_changes?feed=continuous&timeout=100&filter=_selector", body: #"{"selector":{"s":{"$regex":"("}}}"#)
            #expect(pattern.status == 400 && pattern["reason"]?.string?.contains("regular expression") == true, "\(pattern.body)")
            let unknown = try await h.request(.POST, "/db/_changes?filter=_selector", body: #"{"selector":{"n":{"$near":1}}}"#)
            #expect(unknown.status == 400 && unknown["reason"]?.string?.contains("$near") == true)
            let design = try await h.request(.GET, "/db/_changes?filter=app/mine")
            #expect(design.status == 400 && design["reason"]?.string?.contains("_selector") == true)
        }
    }
}
