import Testing
@testable import SyncNodeStore
@testable import SyncNodeSync

/// The replicator reads a peer's `_changes` answer row by row, without a value tree: it must
/// read what the value tree read, and refuse (never trap on) what is not JSON.
@Suite struct ChangesPageTests {
    /// What the rows say, read the plain way: through a value tree.
    static func expected(_ text: String) throws -> (rows: [[String]], lastSeq: String, pending: Int?) {
        let value = try DocumentValue(json: text)
        var rows: [[String]] = []
        if case .array(let results)? = value["results"] {
            for row in results {
                guard case .string(let id)? = row["id"], case .array(let changes)? = row["changes"] else { continue }
                let revs = changes.compactMap { c -> String? in if case .string(let r)? = c["rev"] { return r } else { return nil } }
                rows.append([WireURL.sequenceText(row["seq"]), id] + revs)
            }
        }
        var pending: Int?
        if case .int(let n)? = value["pending"] { pending = Int(n) }
        return (rows, WireURL.sequenceText(value["last_seq"]), pending)
    }

    static let answers = [
        #"{"results":[{"seq":1,"id":"a","changes":[{"rev":"1-x"}]},{"seq":2,"id":"b","changes":[{"rev":"2-y"},{"rev":"2-z"}],"deleted":true}],"last_seq":2,"pending":0}"#,
        // CouchDB's opaque string sequences, whitespace, members in another order, extra members.
        #" { "last_seq" : "7-g1AAAA\u0041" , "results" : [ { "changes" : [ { "rev" : "3-q" , "x" : [1,{}] } ] , "id" : "d\"q\u00e9" , "seq" : "5-g1" , "doc" : {"_id":"d"} } ] , "pending" : 12 } "#,
        // Rows without id or changes, changes that are not an array, entries that are not objects.
        #"{"results":[{"seq":3,"changes":[{"rev":"1-a"}]},{"seq":4,"id":"e"},{"seq":5,"id":"f","changes":{"rev":"1-b"}},{"seq":6,"id":"g","changes":["1-c",{"rev":7},{"rev":"1-d"}]}],"last_seq":6}"#,
        #"{"results":[],"last_seq":0,"pending":0}"#,
        #"{"last_seq":9}"#,
    ]

    @Test func readsWhatAValueTreeReads() throws {
        for text in Self.answers {
            let page = try CouchAnswers.changesPage(text)
            let (rows, lastSeq, pending) = try Self.expected(text)
            #expect(page.rows.map { [$0.seq, $0.id] + $0.revs } == rows, "\(text)")
            #expect(page.lastSeq == lastSeq && page.pending == pending, "\(text)")
        }
    }

    @Test func refusesWhatIsNotJSONAtEveryCut() {
        for text in Self.answers {
            let bytes = Array(text.utf8)
            for cut in 0..<bytes.count where !bytes[cut...].allSatisfy({ $0 == 0x20 }) {
                let truncated = String(decoding: bytes[..<cut], as: UTF8.self)
                #expect(throws: StoreError.self, "\(truncated)") { try CouchAnswers.changesPage(truncated) }
            }
        }
        for bad in ["[]", "null", "7", #"{"results":{}}"#, #"{"results":[1]}"#, #"{"results":[{"id":"a","changes":[{"rev":}]}]}"#,
                    #"{"results":[]} x"#, #"{"results":[{"id":"a","changes":[{"rev":"1-a"}]]}"#] {
            #expect(throws: StoreError.self, "\(bad)") { try CouchAnswers.changesPage(bad) }
        }
    }
}
