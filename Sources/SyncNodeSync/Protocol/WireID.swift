import SyncNodeStore

/// Random IDs in CouchDB's spelling: 32 lowercase hex digits (documents POSTed without an
/// `_id`, `/_uuids`, multipart boundaries).
enum WireID {
    /// 128 random bits. Not a `UUID`'s string: on Linux each `UUID()` opens `/dev/urandom`,
    /// and dropping its dashes went through `NSString`; a node serving many small
    /// attachments makes one boundary per part.
    static func random() -> String {
        let words = (UInt64.random(in: .min ... .max), UInt64.random(in: .min ... .max))
        return withUnsafeBytes(of: words) { Hex.string(Array($0)) }
    }
}
