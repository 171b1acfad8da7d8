import Foundation
import Synchronization

/// Who is writing a revision, as a collection's validator sees it.
public struct WriteAuthor: Sendable, Equatable {
    /// Where the write comes from.
    public enum Origin: Sendable, Equatable {
        /// This app, through the Swift API (or the `syncnode` CLI on the data directory).
        case local
        /// A client of the node's listener: a person, an app, or a peer's replicator pushing.
        case client
        /// This node's replicator, pulling from this peer: `<node uuid>/<database>`, or its URL and
        /// database when it has no UUID.
        case replication(peer: String)
    }

    /// The signed-in user or peer (`peer:<uuid>`); nil for local writes and anonymous clients.
    public var name: String?
    /// Its roles (`_admin` for a server admin).
    public var roles: [String]
    /// Where the write comes from.
    public var origin: Origin

    /// An author with this name, roles and origin.
    public init(name: String? = nil, roles: [String] = [], origin: Origin) {
        self.name = name
        self.roles = roles
        self.origin = origin
    }

    /// The app itself.
    public static let local = WriteAuthor(origin: .local)
}

/// Decides whether a revision may be written, like CouchDB's `validate_doc_update`:
/// it is called with the proposed revision (``Document/isDeleted`` for a
/// deletion), the current winner (nil for a new or deleted document) and the
/// author, and throws to refuse. The error's description becomes the reason
/// the writer is given (a 403 `forbidden` on the wire).
///
/// It runs inside the write transaction, so it sees exactly what the write
/// replaces: it may read documents, but must not write any.
public struct DocumentValidator: Sendable {
    let validate: @Sendable (_ proposed: Document, _ current: Document?, _ author: WriteAuthor) throws -> Void
    /// Whether the app's own saves are checked too (writes from clients and pulls always are).
    let appliesToLocalSaves: Bool

    /// A validator that runs `validate` (see the type's description); `appliesToLocalSaves` checks the app's own saves too.
    public init(
        appliesToLocalSaves: Bool = false,
        _ validate: @escaping @Sendable (_ proposed: Document, _ current: Document?, _ author: WriteAuthor) throws -> Void
    ) {
        self.validate = validate
        self.appliesToLocalSaves = appliesToLocalSaves
    }
}

extension DocumentCollection {
    /// Installs (nil: removes) the collection's validator. Writes from the
    /// listener's clients and from pulls are checked; the app's own saves only
    /// when the validator `appliesToLocalSaves`.
    ///
    /// A refused write throws ``StoreError/rejected(documentID:reason:)``; in a
    /// `_bulk_docs` request or a pull it refuses that document only.
    public func setValidator(_ validator: DocumentValidator?) {
        validatorSlot.withLock { $0 = validator }
    }

    /// Whether the validator sees the app's own saves: then a save must read what it replaces first.
    var validatesLocalSaves: Bool { validatorSlot.withLock { $0?.appliesToLocalSaves ?? false } }

    /// Checks a revision about to be written (inside the write transaction).
    func validate(id: String, rev: String, deleted: Bool, body: CanonicalBody, replacing current: StoredRow?, author: WriteAuthor) throws {
        guard let validator = validatorSlot.withLock({ $0 }), author.origin != .local || validator.appliesToLocalSaves else { return }
        let proposed = Document(id: id, revisionID: rev, sequence: 0, isDeleted: deleted, json: deleted ? "{}" : body.text, blobStore: database.blobStore)
        let existing = current.flatMap { row in
            row.deleted ? nil : Document(id: id, revisionID: row.rev, sequence: row.sequence, isDeleted: false, json: row.body, blobStore: database.blobStore)
        }
        do {
            try validator.validate(proposed, existing, author)
        } catch {
            throw StoreError.rejected(documentID: id, reason: (error as? LocalizedError)?.errorDescription ?? "\(error)")
        }
    }
}
