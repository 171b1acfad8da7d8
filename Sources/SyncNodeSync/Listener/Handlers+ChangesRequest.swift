import Foundation
import Hummingbird
import SyncNodeStore

extension Handlers {
    /// What a `_changes` request asks for.
    struct ChangesRequest {
        enum Feed: String { case normal, longpoll, continuous, eventsource }
        var feed: Feed
        var since: Int64
        var limit: Int?
        var allLeaves: Bool
        var includeDocs: Bool
        var conflicts: Bool
        var descending: Bool
        var docIDs: Set<String>?
        /// `filter=_selector`: only the changes whose winner it matches, tested by SQLite.
        var selector: ChangeSelector?
        /// `live_sources` (a long poll's, SyncNode's own parameter): the peers the asker pulls
        /// from live, as `<uuid>/<database>` (``LivePulls``).
        var liveSources: Set<String> = []
        /// `digest=true` (SyncNode's own): the answer ends with the collection's digest root,
        /// read after its rows. A replicator that applied them compares its own root with it
        /// instead of asking `_digest` (in a mesh, one request per write for each replication).
        var digest = false
        /// `revisions=true` (SyncNode's own): each row of a document with one leaf carries that
        /// revision as `_bulk_get?revs=true` would send it, as `revision`, when it is small and
        /// holds no blob (``inlineRevisionLimit``): a node's long poll then needs no `_bulk_get`.
        var revisions = false
        /// Revisions that came from one of `liveSources` while the feed waited: their rows go
        /// without them (the asker has them, or has them coming, from there).
        var relayed: RelayedRevisions?
        /// Milliseconds; nil means no heartbeat.
        var heartbeat: Int?
        /// Milliseconds without changes after which a feed ends; nil: never
        /// (a continuous feed with a heartbeat and no explicit timeout).
        var timeout: Int?
    }

    /// The options of a `_changes` request, from its query and (a POST's) body.
    func parseChanges(_ request: Request, collection: DocumentCollection) async throws -> ChangesRequest {
        let query = QueryOptions(request.uri)
        var body: [String: DocumentValue] = [:]
        if request.method == .post {
            let text = try await request.textBody(limit: bodyLimit)
            if !text.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty {
                guard case .dictionary(let d) = try DocumentValue(json: text) else { throw CouchError.badRequest("body must be an object") }
                body = d
            }
        }
        guard let feed = ChangesRequest.Feed(rawValue: query["feed"] ?? "normal") else {
            throw CouchError.badRequest("Supported `feed` types: normal, longpoll, continuous, eventsource")
        }
        var since: Int64 = 0
        if let raw = query["since"] ?? body["since"].map({ v -> String in if case .string(let s) = v { return s } else { return v.toJSON() } }) {
            // `now`, or a sequence: digits, optionally followed by `-` and an opaque part (CouchDB's
            // clustered form). A `since` past the end is the end: a client must never store a
            // `last_seq` beyond `update_seq` as its checkpoint, or it misses what comes next.
            let digits = raw.prefix { $0 != "-" }
            if raw == "now" {
                since = try collection.lastSequence()
            } else if !digits.isEmpty, digits.allSatisfy(\.isASCII), let n = Int64(digits), n >= 0 {
                since = min(n, try collection.lastSequence())
            } else {
                throw CouchError.badRequest("Malformed sequence supplied in 'since' parameter.")
            }
        }
        var docIDs: Set<String>?
        var selector: ChangeSelector?
        switch query["filter"] {
        case nil: break
        case "_doc_ids"?:
            var ids: [DocumentValue] = []
            if case .array(let a)? = try query.json("doc_ids") { ids = a }
            if case .array(let a)? = body["doc_ids"] { ids = a }
            docIDs = Set(ids.compactMap { $0.stringValue })
        case "_selector"?:
            guard let given = body["selector"] else { throw CouchError.badRequest("Selector must be specified in POST payload") }
            guard case .dictionary = given else { throw CouchError.badRequest("Selector error: expected a JSON object") }
            selector = try ChangeSelector(given, for: collection)
        case let other?:
            throw CouchError.badRequest("Unsupported filter '\(other)': a node filters changes by _doc_ids or _selector")
        }
        var heartbeat: Int?
        if let raw = query["heartbeat"] {
            switch raw.lowercased() {
            case "true": heartbeat = 60_000
            case "false": heartbeat = nil
            default:
                guard let ms = Int(raw), ms > 0 else { throw CouchError.badRequest("Invalid heartbeat value: \(raw)") }
                heartbeat = min(max(ms, 100), 60_000)
            }
        }
        var liveSources: Set<String> = []
        if let given = try query.json("live_sources") {
            let refusal = CouchError.badRequest("live_sources must be a JSON array of strings")
            guard case .array(let items) = given else { throw refusal }
            let names = items.compactMap(\.stringValue)
            guard names.count == items.count else { throw refusal }
            liveSources = Set(names)
        }
        let style = query["style"] ?? "main_only"
        guard style == "main_only" || style == "all_docs" else { throw CouchError.badRequest("style must be main_only or all_docs") }
        return ChangesRequest(
            feed: feed, since: since, limit: try query.int("limit"), allLeaves: style == "all_docs",
            includeDocs: try query.bool("include_docs"), conflicts: try query.bool("conflicts"),
            descending: try query.bool("descending"), docIDs: docIDs, selector: selector, liveSources: liveSources,
            digest: try query.bool("digest"), revisions: try query.bool("revisions"), heartbeat: heartbeat,
            timeout: try query.int("timeout").map { min($0, 600_000) } ?? (heartbeat == nil || feed != .continuous ? 60_000 : nil))
    }
}
