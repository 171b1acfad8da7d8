import Crypto

/// A document body in canonical JSON with its SHA-1 already absorbed: the
/// costly part of making a revision ID, done before the write transaction
/// (in parallel, for bulk work) rather than while holding the writer.
package struct CanonicalBody: Sendable {
    /// The canonical JSON bytes (sorted keys, no whitespace).
    let json: [UInt8]
    /// SHA-1 state after absorbing `json`; ``RevisionID/make(parent:deleted:body:)``
    /// finishes it. Nil for bodies that arrive with their revision (replicated ones
    /// keep the ID they came with): make hashes those itself if ever asked.
    let digestState: Insecure.SHA1?

    init(json: [UInt8], hashing: Bool = true) {
        self.json = json
        if hashing {
            var hasher = Insecure.SHA1()
            hasher.update(data: json)
            self.digestState = hasher
        } else {
            self.digestState = nil
        }
    }

    /// The canonical form of `object`, all members included (the sync layer
    /// uses this for bodies that carry `_attachments`).
    package init(object: [String: DocumentValue]) {
        var writer = JSONWriter()
        writer.writeObject(object)
        self.init(json: writer.bytes)
    }

    /// A body as the store keeps it: canonical already, so taken as it is.
    package init(storedJSON: String) {
        self.init(json: Array(storedJSON.utf8))
    }

    /// The canonical JSON text as bytes.
    package var bytes: [UInt8] { json }

    /// The body of a deleted revision.
    static let empty = CanonicalBody(json: Array("{}".utf8))

    package var text: String { String(decoding: json, as: UTF8.self) }

    /// Canonicalizes the JSON object in `text`. Top-level members whose names
    /// start with `_` are not part of the body: they are returned apart, for
    /// the caller to interpret (`_id`) or reject.
    /// `hashing: false` leaves the revision hash for later (wire documents,
    /// which mostly carry their revision ID).
    package static func parse(objectJSON text: String, hashing: Bool = true) throws -> (body: CanonicalBody, reserved: [String: DocumentValue]) {
        if let (bytes, reserved) = try JSONCanonicalizer.canonicalObject(text) {
            return (CanonicalBody(json: bytes, hashing: hashing), reserved)
        }
        return try parseAsValues(text, hashing: hashing)
    }

    /// ``parse(objectJSON:hashing:)`` of the object at `start` inside a larger text (a document
    /// in a replication answer), read where it stands; also returns where it ends. `scratch` is
    /// a buffer kept from one call to the next.
    package static func parse(
        objectIn input: UnsafeBufferPointer<UInt8>, at start: Int, hashing: Bool = true, scratch: inout [UInt8]
    ) throws(StoreError) -> (body: CanonicalBody, reserved: [String: DocumentValue], end: Int) {
        let (canonical, end) = try JSONCanonicalizer.canonicalObject(in: input, at: start, scratch: &scratch)
        if let (bytes, reserved) = canonical {
            return (CanonicalBody(json: bytes, hashing: hashing), reserved, end)
        }
        let (body, reserved) = try parseAsValues(String(decoding: UnsafeBufferPointer(rebasing: input[start..<end]), as: UTF8.self), hashing: hashing)
        return (body, reserved, end)
    }

    /// The value-tree path, for what the canonicalizer leaves to it (non-ASCII keys, blob metadata).
    private static func parseAsValues(_ text: String, hashing: Bool) throws(StoreError) -> (body: CanonicalBody, reserved: [String: DocumentValue]) {
        var values = try JSONParser.parseObject(text)
        var reserved: [String: DocumentValue] = [:]
        for key in values.keys where key.hasPrefix("_") { reserved[key] = values.removeValue(forKey: key) }
        var writer = JSONWriter()
        writer.writeObject(values)
        return (CanonicalBody(json: writer.bytes, hashing: hashing), reserved)
    }
}
