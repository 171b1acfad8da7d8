import Foundation
import Synchronization

/// An immutable snapshot of a document as it was read from a collection.
///
/// The body is parsed on first access, so fetching a document to look at its
/// ID or revision costs no JSON parsing. Call ``toMutable()`` to edit it.
public struct Document: DictionaryProtocol, Sendable {
    /// The document's ID, unique in its collection.
    public let id: String
    /// The current revision ID (`<generation>-<digest>`).
    public let revisionID: String?
    /// The collection sequence of the current revision.
    public let sequence: Int64
    /// True for a tombstone (a deleted document's last revision).
    public let isDeleted: Bool
    let body: LazyBody

    init(id: String, revisionID: String?, sequence: Int64, isDeleted: Bool, json: String, blobStore: BlobStore?) {
        self.id = id
        self.revisionID = revisionID
        self.sequence = sequence
        self.isDeleted = isDeleted
        self.body = LazyBody(json: json, blobStore: blobStore)
    }

    /// A revision that is not stored here (a replication filter's view of a
    /// wire document): members whose names start with `_` are left out.
    package init(id: String, revisionID: String?, isDeleted: Bool, values: [String: DocumentValue]) {
        var writer = JSONWriter()
        writer.writeObject(values.filter { !$0.key.hasPrefix("_") })
        self.init(id: id, revisionID: revisionID, sequence: 0, isDeleted: isDeleted, json: writer.text, blobStore: nil)
    }

    /// The generation of the current revision (its number before the dash).
    public var generation: Int { revisionID.flatMap { RevisionID.generation(of: $0) } ?? 0 }

    /// The number of top-level properties (parses the body on first use).
    public var count: Int { body.values.count }
    /// The top-level property names, in UTF-8 byte order.
    public var keys: [String] { body.values.keys.sorted(by: JSONWriter.utf8Order) }
    /// The stored value of property `key`, or nil when it is absent.
    public func documentValue(forKey key: String) -> DocumentValue? { body.values[key] }

    /// The body as stored: canonical JSON.
    public func toJSON() -> String { body.json }

    /// A mutable copy that remembers this revision, so a save with
    /// ``ConcurrencyControl/failOnConflict`` fails if the document changed since.
    public func toMutable() -> MutableDocument {
        MutableDocument(id: id, revisionID: revisionID, sequence: sequence, storage: body.slots)
    }
}

/// A document body parsed once, on first use, by whichever task gets there first.
final class LazyBody: Sendable {
    let json: String
    private let blobStore: BlobStore?
    private let parsed = Mutex<[String: DocumentValue]?>(nil)

    init(json: String, blobStore: BlobStore?) {
        self.json = json
        self.blobStore = blobStore
    }

    var values: [String: DocumentValue] {
        parsed.withLock { cached in
            if let cached { return cached }
            // Bodies are validated when written; an unreadable one reads as empty.
            let values = (try? JSONParser.parseObject(json, blobStore: blobStore)) ?? [:]
            cached = values
            return values
        }
    }

    /// The members for a mutable copy: the parsed values when they are at hand, otherwise each
    /// member's text, so that reading a document to change one property parses nothing else.
    /// A body holding blobs is parsed, for its blobs are bound to this database's blob store.
    var slots: [String: MutableSlot] {
        if let cached = parsed.withLock({ $0 }) { return cached.mapValues { .value($0) } }
        if !Blob.appears(in: json), let slots = try? MutableDictionary.storedSlots(of: json) { return slots }
        return values.mapValues { .value($0) }
    }
}
