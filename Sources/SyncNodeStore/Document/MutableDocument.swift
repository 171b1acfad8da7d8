import Foundation

/// A document being created or edited. Save it with a collection's `save`.
///
/// Not `Sendable`: build and save it on one task. It remembers the revision it
/// was read at, which is what `failOnConflict` compares against.
public final class MutableDocument: MutableDictionary {
    /// The document's ID; generated as a UUID when not given.
    public let id: String
    /// The revision this document was read at (nil for a new document); after
    /// a save, the revision just saved.
    public internal(set) var revisionID: String?
    /// The sequence of ``revisionID`` (0 for a new document).
    public internal(set) var sequence: Int64

    /// A new, empty document; `id` nil means a generated UUID.
    public init(id: String? = nil) {
        self.id = id ?? UUID().uuidString
        self.revisionID = nil
        self.sequence = 0
        super.init()
    }

    /// A new document holding `data` (Foundation values: see ``DocumentValue/init(any:)``).
    /// - Throws: ``StoreError/invalidValue(_:)`` for a value with no JSON form. The ID is checked when the
    ///   document is saved, not here.
    public convenience init(id: String? = nil, data: [String: Any]) throws {
        self.init(id: id)
        try setData(data)
    }

    /// A new document holding `values`: the typed form of ``init(id:data:)``, with nothing to
    /// convert and nothing to throw (the ID and any `_` key are checked when it is saved).
    public convenience init(id: String? = nil, values: [String: DocumentValue]) {
        self.init(id: id ?? UUID().uuidString, revisionID: nil, sequence: 0, values: values)
    }

    /// A new document holding the JSON object `json`.
    /// - Throws: ``StoreError/invalidJSON(_:)`` when `json` is not valid JSON or not an object.
    public convenience init(id: String? = nil, json: String) throws {
        self.init(id: id)
        try setJSON(json)
    }

    convenience init(id: String, revisionID: String?, sequence: Int64, values: [String: DocumentValue]) {
        self.init(id: id, revisionID: revisionID, sequence: sequence, storage: values.mapValues { .value($0) })
    }

    init(id: String, revisionID: String?, sequence: Int64, storage: [String: MutableSlot]) {
        self.id = id
        self.revisionID = revisionID
        self.sequence = sequence
        super.init(storage: storage)
    }

    /// A copy to keep editing independently (same ID and base revision).
    public func toMutable() -> MutableDocument {
        MutableDocument(id: id, revisionID: revisionID, sequence: sequence, values: snapshot())
    }
}
