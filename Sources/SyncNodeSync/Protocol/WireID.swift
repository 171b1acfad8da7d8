import SyncNodeStore

/// Random IDs in CouchDB's spelling: 32 lowercase hex digits (documents POSTed without an
/// `_id`, `/_uuids`, multipart boundaries).
enum WireID {
    /// 128 random bits. Not a `UUID`'s string: on Linux each `UUID()` opens `/dev/urandom`,
    /// and dropping its dashes went through `NSString`; a node serving many small
    /// attachments makes one boundary per part.
    static func random() -> String {
        var generator = SystemRandomNumberGenerator()
        var bytes: [UInt8] = []
        bytes.reserveCapacity(16)
        for _ in 0..<2 {
            let word: UInt64 = generator.next()
            for shift in stride(from: 0, to: 64, by: 8) { bytes.append(UInt8(truncatingIfNeeded: word >> UInt64(shift))) }
        }
        return Hex.string(bytes)
    }
}
