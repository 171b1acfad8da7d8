import NIOHTTP1
import SyncNodeStore

/// CouchDB's answers read where they stand in the answer's text, without a value tree:
/// a `_changes` page and the documents of `_bulk_get` or `open_revs`.
enum CouchAnswers {
    /// A `_changes` answer read row by row where it stands: a page holds thousands of rows, and
    /// a value tree of each cost a tenth of a pull's CPU. Rows without `id` or `changes` are skipped.
    static func changesPage(_ text: String) throws(StoreError) -> PeerChanges {
        var lastSeq: DocumentValue?
        var pending: Int?
        var digestRoot: String?
        var rows: [PeerChange] = []
        var scratch: [UInt8] = []
        try JSONParser.reading(text) { input, start throws(StoreError) in
            ((), try JSONParser.members(ofObjectIn: input, at: start, depth: 0) { name, at throws(StoreError) in
                guard name == "results" else {
                    let (value, end) = try JSONParser.parseValue(in: input, at: at, depth: 1)
                    if name == "last_seq" { lastSeq = value }
                    if name == "pending", case .int(let n) = value { pending = Int(n) }
                    if name == "digest" { digestRoot = value.stringValue }
                    return end
                }
                return try JSONParser.elements(ofArrayIn: input, at: at, depth: 1) { row throws(StoreError) in
                    let (change, end) = try changeRow(in: input, at: row, scratch: &scratch)
                    if let change { rows.append(change) }
                    return end
                }
            })
        }
        return PeerChanges(rows: rows, lastSeq: WireURL.sequenceText(lastSeq), pending: pending, digestRoot: digestRoot)
    }

    /// One row of a `_changes` answer, and where it ends; nil for a row without `id` or `changes`.
    /// A node's `revision` is kept only when it is the row's one revision, with its history.
    private static func changeRow(
        in input: UnsafeBufferPointer<UInt8>, at start: Int, scratch: inout [UInt8]
    ) throws(StoreError) -> (PeerChange?, end: Int) {
        func starts(_ at: Int, with byte: Character) -> Bool { at < input.count && input[at] == byte.asciiValue }
        var id: String?
        var seq: DocumentValue?
        var revs: [String]?
        var revision: WireRevision?
        let end = try JSONParser.members(ofObjectIn: input, at: start, depth: 2) { name, at throws(StoreError) in
            if name == "revision", starts(at, with: "{") {
                let (read, end) = try WireRevision.read(in: input, at: at, scratch: &scratch)
                revision = read
                return end
            }
            guard name == "changes", starts(at, with: "[") else {
                let (value, end) = try JSONParser.parseValue(in: input, at: at, depth: 3)
                if name == "id", case .string(let s) = value { id = s }
                if name == "seq" { seq = value }
                return end
            }
            var found: [String] = []
            let end = try JSONParser.elements(ofArrayIn: input, at: at, depth: 3) { change throws(StoreError) in
                guard starts(change, with: "{") else { return try JSONParser.parseValue(in: input, at: change, depth: 4).end }
                return try JSONParser.members(ofObjectIn: input, at: change, depth: 4) { name, at throws(StoreError) in
                    let (value, end) = try JSONParser.parseValue(in: input, at: at, depth: 5)
                    if name == "rev", case .string(let rev) = value { found.append(rev) }
                    return end
                }
            }
            revs = found
            return end
        }
        guard let id, let revs else { return (nil, end) }
        if let given = revision, given.id != id || revs != [given.rev] || given.meta["_revisions"] == nil || given.meta["_attachments"] != nil {
            revision = nil
        }
        return (PeerChange(seq: WireURL.sequenceText(seq), id: id, revs: revs, revision: revision), end)
    }

    /// The documents at `path` in a 2xx answer, split and canonicalized from
    /// its text; entries that are not objects are skipped. Malformed JSON is a
    /// bad gateway (retried), not a store error (which would stop the replicator).
    static func documents(at path: [JSONSkimmer.Step], in text: String, _ method: HTTPMethod, _ url: String, _ status: Int) throws -> [WireRevision] {
        do {
            var scratch: [UInt8] = []
            scratch.reserveCapacity(64 * 1024)
            return try JSONSkimmer.values(at: path, in: text) { input, start throws(StoreError) in
                input[start] == UInt8(ascii: "{") ? try WireRevision.read(in: input, at: start, scratch: &scratch) : nil
            }
        } catch {
            throw PeerStatus.notJSON(method, url, status)
        }
    }
}
