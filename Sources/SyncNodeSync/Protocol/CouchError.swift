import SyncNodeStore

/// An error in CouchDB's wire shape: an HTTP status and a body
/// `{"error": "...", "reason": "..."}`. The listener answers with these; the
/// replicator reads them back from peers.
public struct CouchError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The HTTP status (404, 409, ...).
    public let status: Int
    /// CouchDB's error name (`not_found`, `conflict`, `forbidden`, ...).
    public let error: String
    /// What went wrong, for people.
    public let reason: String

    /// An error as a CouchDB server answers it.
    public init(status: Int, error: String, reason: String) {
        self.status = status
        self.error = error
        self.reason = reason
    }

    /// `status error: reason`.
    public var description: String { "\(status) \(error): \(reason)" }

    static func badRequest(_ reason: String) -> CouchError { CouchError(status: 400, error: "bad_request", reason: reason) }
    static func notFound(_ reason: String = "missing") -> CouchError { CouchError(status: 404, error: "not_found", reason: reason) }
    static func conflict(_ reason: String = "Document update conflict.") -> CouchError { CouchError(status: 409, error: "conflict", reason: reason) }
    static let unauthorized = CouchError(status: 401, error: "unauthorized", reason: "Name or password is incorrect.")
    static func forbidden(_ reason: String) -> CouchError { CouchError(status: 403, error: "forbidden", reason: reason) }
    static func methodNotAllowed(_ allowed: String) -> CouchError {
        CouchError(status: 405, error: "method_not_allowed", reason: "Only \(allowed) allowed")
    }
    static func tooLarge(_ reason: String) -> CouchError { CouchError(status: 413, error: "too_large", reason: reason) }
    static func unsupportedMediaType(_ reason: String) -> CouchError { CouchError(status: 415, error: "bad_content_type", reason: reason) }

    /// The CouchDB error a store error stands for.
    init(_ error: StoreError) {
        switch error {
        case .invalidJSON(let r): self = .badRequest("invalid JSON: \(r)")
        case .invalidValue(let r): self = .badRequest(r)
        case .reservedProperty(let k):
            self = CouchError(status: 400, error: "doc_validation", reason: "Bad special document member: \(k)")
        case .invalidName(let n, let r): self = CouchError(status: 400, error: "illegal_database_name", reason: "Name: '\(n)'. \(r)")
        case .invalidDocumentID(_, let r): self = CouchError(status: 400, error: "illegal_docid", reason: r)
        case .conflict: self = .conflict()
        case .notFound(.document, _), .notFound(.revision, _), .notFound(.localDocument, _): self = .notFound("missing")
        case .notFound(.database, _), .notFound(.collection, _): self = .notFound("Database does not exist.")
        case .notFound(_, let what): self = .notFound(what)
        case .alreadyExists(let what): self = CouchError(status: 412, error: "file_exists", reason: "The database could not be created, the file already exists: \(what)")
        case .databaseClosed(let n): self = CouchError(status: 503, error: "service_unavailable", reason: "database \(n) is closed")
        case .collectionDeleted: self = .notFound("Database does not exist.")
        case .invalidRevision(let r): self = .badRequest("Invalid rev format: \(r)")
        case .rejected(_, let reason): self = .forbidden(reason)
        case .io(let r), .storage(let r): self = CouchError(status: 500, error: "internal_server_error", reason: r)
        case .sqlite:
            self = switch error.sqliteCondition {
            case .diskFull: CouchError(status: 507, error: "insufficient_storage", reason: error.description)
            case .busy: CouchError(status: 503, error: "service_unavailable", reason: error.description)
            default: CouchError(status: 500, error: "internal_server_error", reason: error.description)
            }
        case .invalidQuery(let r): self = CouchError(status: 400, error: "query_parse_error", reason: r)
        case .decodingFailed: self = CouchError(status: 500, error: "internal_server_error", reason: error.description)
        }
    }

    /// The JSON body.
    var body: DocumentValue { ["error": .string(error), "reason": .string(reason)] }
}
