import Foundation

/// Codable models as documents. A model needs a ``DocumentID`` property to be
/// saved, deleted or purged; decoding needs none.
///
/// ```swift
/// let task = Task(title: "Buy milk")
/// try tasks.save(from: task)                 // task.id is now the generated ID
/// let again = try tasks.document(id: task.id!, as: Task.self)
/// ```
extension DocumentCollection {
    /// Saves the model as its document; if the document changed since the
    /// model was read, this save wins (last write wins). A model whose ID is
    /// nil becomes a new document with a generated ID, written back to it.
    /// - Throws: ``StoreError/invalidValue(_:)`` for a model without a
    ///   ``DocumentID``, one that does not encode as an object, or a value with no stored form (NaN, an
    ///   integer over 64 signed bits), naming its key path; otherwise the errors of
    ///   ``DocumentCollection/save(_:)`` (an invalid ID, a reserved `_` property, the validator's refusal...).
    ///
    /// Stored properties the model does not declare are kept (``UndeclaredProperties/keep``):
    /// a field that a newer version of the app writes survives an older version's save.
    public func save<Model: Encodable>(from model: Model, undeclaredProperties: UndeclaredProperties = .keep) throws {
        try save(from: model, concurrencyControl: .lastWriteWins, undeclaredProperties: undeclaredProperties)
    }

    /// Saves the model with the given conflict policy.
    /// - Throws: ``StoreError/conflict(documentID:)`` with `.failOnConflict`
    ///   when the document changed since the model was read (or, for a model
    ///   never read, when the document exists); otherwise the errors of ``save(from:undeclaredProperties:)``.
    public func save<Model: Encodable>(
        from model: Model, concurrencyControl: ConcurrencyControl, undeclaredProperties: UndeclaredProperties = .keep
    ) throws {
        let encoded = try ModelEncoder.encode(model)
        guard let identity = encoded.identity else { throw Self.missingDocumentID(Model.self, "save") }
        _ = try commitModel(identity, deleting: false, values: { stored in try body(of: encoded, stored, undeclaredProperties) }) { id, _ in
            try concurrencyControl.overwrites(documentID: id)
        }
    }

    /// Saves the model; when the document changed since the model was read,
    /// calls `conflictHandler` with the model (which it may edit: its edits
    /// are what gets saved) and the stored document decoded (nil when deleted).
    /// Returns false, saving nothing, when the handler returns false.
    ///
    /// A class model holds the merged result afterwards. A struct model is
    /// passed by value, so yours still holds what you passed: it keeps its old
    /// revision, and its next save meets the conflict again (decode the
    /// document to see the merge).
    /// - Throws: whatever `conflictHandler` throws (nothing is saved);
    ///   ``StoreError/decodingFailed(type:documentID:keyPath:reason:)`` when the stored document does not
    ///   decode as `Model`; otherwise the errors of ``save(from:undeclaredProperties:)``.
    @discardableResult
    public func save<Model: Codable>(
        from model: Model, undeclaredProperties: UndeclaredProperties = .keep, conflictHandler: (inout Model, Model?) throws -> Bool
    ) throws -> Bool {
        var edited = model
        var handled = false
        let identity = try Self.identity(of: model, for: "save")
        let isClass = type(of: model as Any) is AnyClass
        // Encoded before the write transaction; again inside only when the handler edited it.
        let encoded = try ModelEncoder.encode(model)
        return try commitModel(identity, deleting: false,
                               values: { stored in try body(of: handled ? ModelEncoder.encode(edited) : encoded, stored, undeclaredProperties) },
                               keepsBase: { handled && !isClass }) { _, stored in
            handled = true
            let existing = try stored.map { try $0.data(as: Model.self) }
            return try conflictHandler(&edited, existing)
        }
    }

    /// The document decoded as `type`, or nil when it does not exist or was deleted.
    /// - Throws: ``StoreError/decodingFailed(type:documentID:keyPath:reason:)``
    ///   naming the key path that does not fit; otherwise the errors of ``document(id:)``.
    public func document<Model: Decodable>(id: String, as type: Model.Type) throws -> Model? {
        try document(id: id).map { try $0.data(as: type) }
    }

    /// Deletes the model's document (last write wins), leaving a tombstone that replicates.
    /// - Throws: ``StoreError/invalidValue(_:)`` for a model without a ``DocumentID``;
    ///   ``StoreError/notFound(_:_:)`` when its ID is nil (``StoreError/Subject/model``) or there is no live
    ///   document with it (``StoreError/Subject/document``); otherwise the errors of ``delete(_:)``.
    public func delete<Model: Encodable>(for model: Model) throws {
        try delete(for: model, concurrencyControl: .lastWriteWins)
    }

    /// Deletes the model's document with the given conflict policy.
    /// - Throws: ``StoreError/conflict(documentID:)`` with `.failOnConflict` when the document changed
    ///   since the model was read; otherwise the errors of ``delete(for:)``.
    public func delete<Model: Encodable>(for model: Model, concurrencyControl: ConcurrencyControl) throws {
        let identity = try Self.identity(of: model, for: "delete")
        guard identity.id != nil else { throw StoreError.notFound(.model, "\(Model.self) has no document ID: it was never saved") }
        _ = try commitModel(identity, deleting: true, values: { _ in [:] }) { id, _ in try concurrencyControl.overwrites(documentID: id) }
    }

    /// Removes every trace of the model's document: no tombstone, nothing replicates.
    /// - Throws: ``StoreError/invalidValue(_:)`` for a model without a ``DocumentID``;
    ///   ``StoreError/notFound(_:_:)`` (``StoreError/Subject/model``) when its ID is nil; otherwise the
    ///   errors of ``purge(id:)``.
    public func purge<Model: Encodable>(for model: Model) throws {
        guard let id = try Self.identity(of: model, for: "purge").id else {
            throw StoreError.notFound(.model, "\(Model.self) has no document ID: it was never saved")
        }
        try purge(id: id)
    }

    private static func identity<Model>(of model: Model, for action: String) throws -> DocumentIdentity {
        guard let identity = DocumentIdentity.find(in: model) else { throw missingDocumentID(Model.self, action) }
        return identity
    }

    private static func missingDocumentID(_ type: Any.Type, _ action: String) -> StoreError {
        .invalidValue("cannot \(action) \(type): it has no @DocumentID property; add `@DocumentID var id: String?` so the store knows its document")
    }

    /// The body a model's save writes: its properties, and with ``UndeclaredProperties/keep``
    /// the properties it does not declare of `stored`, the body the write transaction found
    /// (so what it keeps is what is stored when the save commits).
    private func body(of encoded: EncodedModel, _ stored: String?, _ undeclared: UndeclaredProperties) throws -> [String: DocumentValue] {
        guard undeclared == .keep, let stored, case .dictionary(let values) = try DocumentValue(json: stored) else { return encoded.values }
        return encoded.values(keepingUndeclaredIn: values)
    }

    /// Commits an edit of the model's document and writes the ID and the new
    /// revision back into its ``DocumentID``.
    private func commitModel(
        _ identity: DocumentIdentity, deleting: Bool,
        values: (_ stored: String?) throws -> [String: DocumentValue], keepsBase: () -> Bool = { false },
        onConflict: (_ id: String, _ stored: Document?) throws -> Bool
    ) throws -> Bool {
        let (knownID, base) = identity.current
        let id = knownID ?? UUID().uuidString
        let editBase: EditBase
        switch base {
        case .none: editBase = .revision(nil)
        case .revision(let rev): editBase = .revision(rev)
        case .current: editBase = .current
        }
        guard let (rev, _) = try commitEdit(id: id, base: editBase, deleting: deleting, body: { try encodeBody(values($0)) }, onConflict: { try onConflict(id, $0) }) else {
            return false
        }
        identity.update(id: id, base: keepsBase() ? base : .revision(rev))
        return true
    }
}

extension Document {
    /// The document decoded as `type`; its ``DocumentID`` property, if any,
    /// gets the ID and remembers this revision.
    /// - Throws: ``StoreError/decodingFailed(type:documentID:keyPath:reason:)`` naming the key path that
    ///   does not fit; an error the model's own `init(from:)` throws that is not a `DecodingError` passes
    ///   through unchanged.
    public func data<Model: Decodable>(as type: Model.Type) throws -> Model {
        try ModelDecoder.decode(type, from: .dictionary(body.values), source: .document(self))
    }
}

extension Result {
    /// The row decoded as `type`: the whole row, or with `dataKey` the
    /// dictionary in that column (`SELECT meta().id AS id, * AS data ...`
    /// decodes with `dataKey: "data"`).
    ///
    /// A ``DocumentID`` property gets the document of the `dataKey` column
    /// (a `*` column), else the one its key's column names: a `meta().id`
    /// column knows its document's revision, any other string column is taken
    /// as an ID read without one. Unless the query merged rows (DISTINCT,
    /// GROUP BY, aggregates), the model then remembers the revision the row
    /// read. Saving a model decoded from some properties writes those and keeps the stored
    /// document's others (``UndeclaredProperties``).
    /// - Throws: ``StoreError/decodingFailed(type:documentID:keyPath:reason:)`` when a value does not fit
    ///   or the query has no column `dataKey`.
    public func data<Model: Decodable>(as type: Model.Type, dataKey: String? = nil) throws -> Model {
        var source = ModelSource(document: nil, row: self)
        let value: DocumentValue
        if let dataKey {
            guard let column = layout.columnNames.lastIndex(of: dataKey) else {
                throw StoreError.decodingFailed(type: "\(type)", documentID: nil, keyPath: dataKey, reason: "the query has no column '\(dataKey)' (columns: \(layout.columnNames.joined(separator: ", ")))")
            }
            value = values[column] ?? .null
            if case .dictionary? = values[column], let (id, rev) = origin(column: dataKey) { source.document = (id, .revision(rev)) }
        } else {
            value = .dictionary(members)
        }
        return try ModelDecoder.decode(type, from: value, source: source)
    }
}

extension ResultSet {
    /// Every row decoded as `type` (see ``Result/data(as:dataKey:)``). This
    /// holds all models in memory: iterate the rows for large results.
    /// - Throws: the error of ``Result/data(as:dataKey:)`` for the first row that does not decode.
    public func data<Model: Decodable>(as type: Model.Type, dataKey: String? = nil) throws -> [Model] {
        try map { try $0.data(as: type, dataKey: dataKey) }
    }
}

/// What a model's save does with the stored document's properties that the model does not
/// declare (a key its `encode(to:)` never names, not even as a nil optional).
public enum UndeclaredProperties: Sendable, Equatable {
    /// Keep them, at the top level and inside nested objects: a field that another version of
    /// the app (on another node, say) writes is never erased by a model that does not know it.
    /// The default.
    case keep
    /// Drop them: the document holds exactly the model's properties.
    case drop
}
