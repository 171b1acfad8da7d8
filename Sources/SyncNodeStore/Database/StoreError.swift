import GRDB
import Foundation

/// The errors the store throws. Each says what went wrong and, where there is
/// one, what to do about it.
public enum StoreError: Error, Sendable, Equatable {
    /// The kinds of thing ``notFound(_:_:)`` reports missing, so callers decide by kind, not by text.
    public enum Subject: Sendable, Equatable {
        /// A document (by ID).
        case document
        /// A revision of a document; also reported for deleting a revision that is already deleted.
        case revision
        /// A local (non-replicated) document, such as a replication checkpoint.
        case localDocument
        /// A collection (by scope and name).
        case collection
        /// A database (by name or path).
        case database
        /// A blob's content (by digest).
        case blob
        /// An index (by name).
        case index
        /// A model object that was never saved (no document ID).
        case model
        /// A file the caller expected (an executable, say).
        case file
    }

    /// The text is not valid JSON (or not a JSON object where one is needed).
    case invalidJSON(String)
    /// A value has no JSON form (a custom type, NaN, an out-of-range integer), or a setting is out of range.
    case invalidValue(String)
    /// A top-level property name starts with `_`, which is reserved (`_id`, `_rev`, ...).
    case reservedProperty(String)
    /// A database, scope or collection name breaks the naming rules.
    case invalidName(String, reason: String)
    /// A document ID is empty, too long, or reserved.
    case invalidDocumentID(String, reason: String)
    /// The document changed since it was read and the save asked to fail on conflict.
    case conflict(documentID: String)
    /// No such thing: `subject` says which kind, the text which one.
    case notFound(Subject, String)
    /// The thing exists already.
    case alreadyExists(String)
    /// The database was closed; open it again to use it.
    case databaseClosed(String)
    /// The collection was deleted; get or create it again.
    case collectionDeleted(String)
    /// A revision ID is not of the form `<generation>-<suffix>`, or a history is inconsistent.
    case invalidRevision(String)
    /// The collection's validator refused the write (see ``DocumentCollection/setValidator(_:)``).
    case rejected(documentID: String, reason: String)
    /// A file-system operation failed (blobs, database directories).
    case io(String)
    /// The database's contents are not what the store wrote: a row, a revision tree or a
    /// digest it cannot read.
    case storage(String)
    /// SQLite reported an error: `code` is its extended result code (`SQLITE_FULL` is 13, a
    /// full disk; `SQLITE_BUSY` 5 and `SQLITE_LOCKED` 6, another connection holding the database
    /// too long; `SQLITE_CORRUPT` 11 and `SQLITE_NOTADB` 26, a damaged file), `message` what it
    /// said and about what.
    case sqlite(code: Int32, message: String)
    /// A query or index definition is malformed (a SQL++ syntax error names
    /// the position and what was expected) or cannot run.
    case invalidQuery(String)
    /// A document or query row does not fit the model type: `keyPath`
    /// (`tags[2].name`) says where, `reason` what was found instead.
    case decodingFailed(type: String, documentID: String?, keyPath: String, reason: String)
}

extension StoreError {
    /// True for errors about one document's content (its ID, body or
    /// revision), as opposed to the database as a whole: a batch of other
    /// documents can go on without it.
    public var isDocumentLevel: Bool {
        switch self {
        case .invalidJSON, .invalidValue, .reservedProperty, .invalidDocumentID, .conflict, .invalidRevision, .notFound, .rejected: return true
        default: return false
        }
    }
}

extension StoreError: CustomStringConvertible, LocalizedError {
    /// A one-line explanation for people, starting with the kind of error (`conflict: ...`,
    /// `not found: ...`) and, where there is one, saying what to do.
    public var description: String {
        switch self {
        case .invalidJSON(let r): return "invalid JSON: \(r)"
        case .invalidValue(let r): return "invalid value: \(r)"
        case .reservedProperty(let k):
            return "property name '\(k)' is reserved: top-level names starting with '_' belong to the store (_id, _rev, _deleted, _revisions; _attachments may hold blobs)"
        case .invalidName(let n, let r): return "invalid name '\(n)': \(r)"
        case .invalidDocumentID(let id, let r): return "invalid document ID '\(id)': \(r)"
        case .conflict(let id): return "conflict: document '\(id)' changed since it was read; read it again and reapply the change, or save with .lastWriteWins"
        case .notFound(_, let what): return "not found: \(what)"
        case .alreadyExists(let what): return "already exists: \(what)"
        case .databaseClosed(let name): return "database '\(name)' is closed; open it again"
        case .collectionDeleted(let name): return "collection '\(name)' was deleted; create it again"
        case .invalidRevision(let r): return "invalid revision: \(r)"
        case .rejected(let id, let reason): return "document '\(id)' was rejected by the collection's validator: \(reason)"
        case .io(let r): return "I/O error: \(r)"
        case .storage(let r): return "storage error: \(r)"
        case .sqlite(let code, let message): return "SQLite error \(code): \(message)\(advice)"
        case .invalidQuery(let r): return "invalid query: \(r)"
        case .decodingFailed(let type, let id, let path, let reason):
            return "cannot decode \(type) from \(id.map { "document '\($0)'" } ?? "a query row") at \(path): \(reason)"
        }
    }

    /// What an SQLite result code means to whoever meets it.
    public enum SQLiteCondition: Sendable {
        /// `SQLITE_FULL`: no room on the disk; nothing was written.
        case diskFull
        /// `SQLITE_BUSY`, `SQLITE_LOCKED`: another connection held the database too long.
        case busy
        /// `SQLITE_CORRUPT`, `SQLITE_NOTADB`: the file is damaged.
        case damaged
        /// Any other code.
        case other
    }

    /// For ``sqlite(code:message:)``, what its code means; nil for other errors.
    public var sqliteCondition: SQLiteCondition? {
        guard case .sqlite(let code, _) = self else { return nil }
        switch code & 0xff {
        case 13: return .diskFull
        case 5, 6: return .busy
        case 11, 26: return .damaged
        default: return .other
        }
    }

    /// What to do about an SQLite error, when there is something to say.
    private var advice: String {
        switch sqliteCondition {
        case .diskFull: " (the disk is full: free space, then try again; nothing was written)"
        case .busy: " (the database stayed busy: another process holds it; try again)"
        case .damaged: " (the file is damaged: restore it from a backup, or let peers fill a new one)"
        case .other, nil: ""
        }
    }

    /// The same text as ``description``, for `localizedDescription`.
    public var errorDescription: String? { description }
}

extension StoreError {
    /// `error`, thrown while `doing` something, as the store reports it: a store error as it is,
    /// SQLite's with its result code (``sqlite(code:message:)``), anything else as ``storage(_:)``.
    static func from(_ error: any Error, doing: String) -> StoreError {
        switch error {
        case let error as StoreError: error
        case let error as DatabaseError: .sqlite(code: error.extendedResultCode.rawValue, message: "\(doing): \(error.message ?? error.description)")
        default: .storage("\(doing): \(error)")
        }
    }
}
