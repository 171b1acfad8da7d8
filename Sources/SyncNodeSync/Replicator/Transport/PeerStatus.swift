import NIOHTTP1
import SyncNodeStore

/// What a peer's HTTP status means to a replication, by name, and the one way a peer's error
/// answer becomes a ``CouchError``.
enum PeerStatus {
    /// The request did what it asked.
    static let success = 200..<300
    /// A document's own problem (a validator, a conflict, a size limit, a missing stub, a
    /// content type): that document is refused and the others go on.
    static let documentRefusals: Set = [400, 403, 409, 412, 413, 415]
    /// The peer has no `_bulk_get` (an older CouchDB, another implementation): read with `open_revs`.
    static let noBulkGet: Set = [400, 404, 405, 501]
    /// The peer serves no `_digest` (CouchDB, PouchDB; `_digest` read as a document ID).
    static let noDigest: Set = [400, 404, 405]
    /// The peer lacks an attachment's content: its stub stays, and that document alone is refused.
    static let contentGone: Set = [404, 410]
    /// The peer does not have it (a checkpoint, `GET /`).
    static let notFound = 404
    /// The peer will not let this node in, or not do this.
    static let refused: Set = [401, 403]

    /// Whether a failure with this status may pass if asked again: a timeout (408), too many
    /// requests (429), or the server's trouble (5xx). Any other 4xx is the peer's refusal.
    static func isRetryable(_ status: Int) -> Bool { status == 408 || status == 429 || status >= 500 }

    /// The peer's error answer (`{"error","reason"}`), or `http_error` for one without that shape.
    static func error(_ status: Int, _ value: DocumentValue) -> CouchError {
        if case .dictionary(let d) = value, case .string(let e)? = d["error"] {
            let reason: String
            if case .string(let r)? = d["reason"] { reason = r } else { reason = "" }
            return CouchError(status: status, error: e, reason: reason)
        }
        return CouchError(status: status, error: "http_error", reason: "HTTP \(status)")
    }

    /// The peer's error answer, from its text (read as `null` when it is not JSON).
    static func error(_ status: Int, answer text: String) -> CouchError {
        error(status, (try? DocumentValue(json: text)) ?? .null)
    }

    /// A 2xx answer that is not the JSON it must be: a bad gateway (retried), not a store error
    /// (which would stop the replicator).
    static func notJSON(_ method: HTTPMethod, _ path: String, _ status: Int) -> CouchError {
        CouchError(status: 502, error: "bad_gateway", reason: "\(method) \(path) answered HTTP \(status) with a body that is not JSON")
    }
}
