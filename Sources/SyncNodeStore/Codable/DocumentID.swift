import Synchronization

/// Marks the property of a Codable model that holds its document ID.
///
/// ```swift
/// final class Task: Codable {
///     @DocumentID var id: String?
///     var title: String
///     var completed = false
/// }
/// ```
///
/// The ID is not stored in the document body. It is filled when a model is
/// decoded from a document or a query result, and after
/// ``DocumentCollection/save(from:undeclaredProperties:)`` (with a generated UUID when it was nil).
/// The wrapper also remembers which revision the model was read at, so a save
/// with ``ConcurrencyControl/failOnConflict`` fails when the document changed since.
///
/// Copies of a struct model share that memory (ID and revision) until one of
/// them is given another ID: they stand for the same document, and saving one
/// moves all of them to the new revision. To hold two independent edits of a
/// document, decode it twice; or use classes, as Couchbase Lite recommends.
@propertyWrapper
public struct DocumentID: Sendable, Hashable, Codable {
    var identity: DocumentIdentity

    /// A model for the document `wrappedValue`, or for a new document when nil.
    public init(wrappedValue: String?) {
        identity = DocumentIdentity(id: wrappedValue, base: .none)
    }

    /// A model for a new document (lets `@DocumentID var id: String?` go without an initial value).
    public init() { self.init(wrappedValue: nil) }

    /// The document ID. Setting it makes the model stand for that document as
    /// a new edit (no remembered revision).
    public var wrappedValue: String? {
        get { identity.id }
        set { identity = DocumentIdentity(id: newValue, base: .none) }
    }

    /// Equal when the IDs are; the remembered base revision is not compared.
    public static func == (a: DocumentID, b: DocumentID) -> Bool { a.wrappedValue == b.wrappedValue }
    /// Hashes the ID only, consistent with `==`.
    public func hash(into hasher: inout Hasher) { hasher.combine(wrappedValue) }

    /// Outside the store's coder (`JSONEncoder`...) the ID is a plain string, or null.
    /// - Throws: the encoder's `EncodingError`.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        if let id = wrappedValue { try container.encode(id) } else { try container.encodeNil() }
    }

    /// The store's coder fills the ID from the document being decoded; other
    /// decoders read a string or null.
    /// - Throws: `DecodingError` when another decoder finds a value that is neither a string nor null.
    public init(from decoder: any Decoder) throws {
        if let decoder = decoder as? ModelDecoder, decoder.codingPath.count == 1 {
            identity = decoder.documentIdentity()
            return
        }
        let container = try decoder.singleValueContainer()
        identity = DocumentIdentity(id: container.decodeNil() ? nil : try container.decode(String.self), base: .none)
    }
}

extension KeyedDecodingContainer {
    /// A model's ``DocumentID`` is not in the document body: a missing key is
    /// not an error.
    /// - Throws: `DecodingError` when the key holds a value that is neither a string nor null.
    public func decode(_ type: DocumentID.Type, forKey key: Key) throws -> DocumentID {
        try DocumentID(from: superDecoder(forKey: key))
    }
}

/// Which document a model stands for, and the revision it was read at.
final class DocumentIdentity: Sendable {
    /// What a save compares the stored document against.
    enum Base: Sendable, Equatable {
        /// A new document, or an ID set by hand: any stored revision is a conflict.
        case none
        /// Read at this revision.
        case revision(String)
        /// Read without knowing the revision (a query row that merged
        /// documents): the revision stored at save time counts as read.
        case current
    }

    private let state: Mutex<(id: String?, base: Base)>

    init(id: String?, base: Base) { state = Mutex((id, base)) }

    var id: String? { state.withLock { $0.id } }
    var current: (id: String?, base: Base) { state.withLock { $0 } }

    func update(id: String, base: Base) { state.withLock { $0 = (id, base) } }
}

extension DocumentIdentity {
    /// A model's ``DocumentID`` property found by reflection: for models whose
    /// own `encode(to:)` leaves it out, and for deletes (which encode nothing).
    static func find(in model: Any) -> DocumentIdentity? {
        var mirror: Mirror? = Mirror(reflecting: model)
        while let m = mirror {
            for child in m.children { if let id = child.value as? DocumentID { return id.identity } }
            mirror = m.superclassMirror
        }
        return nil
    }
}
