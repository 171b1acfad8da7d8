import Crypto
import Foundation

/// Revision IDs: `<generation>-<suffix>`. Ours have a 32-hex-digit (128-bit)
/// suffix, the shape CouchDB makes and stores as 16 bytes; those made by other
/// replicators (older nodes' 40-digit ones among them) are kept as they are
/// and never renumbered.
package enum RevisionID {
    /// The generation, or nil when `rev` is malformed.
    package static func generation(of rev: String) -> Int? {
        guard let dash = rev.utf8.firstIndex(of: UInt8(ascii: "-")), dash != rev.utf8.startIndex else { return nil }
        let digits = rev.utf8[rev.utf8.startIndex..<dash]
        guard digits.count <= 9 else { return nil }
        var n = 0
        for c in digits {
            guard c >= UInt8(ascii: "0"), c <= UInt8(ascii: "9") else { return nil }
            n = n * 10 + Int(c - UInt8(ascii: "0"))
        }
        return n > 0 ? n : nil
    }

    /// Checks the form a foreign revision ID must have: a positive generation,
    /// a dash and 1-255 printable ASCII characters without spaces.
    static func validate(_ rev: String) throws(StoreError) -> Int {
        guard let gen = generation(of: rev) else {
            throw .invalidRevision("'\(rev)' is not of the form <generation>-<suffix>")
        }
        let suffix = rev.utf8.drop { $0 != UInt8(ascii: "-") }.dropFirst()
        guard !suffix.isEmpty, suffix.count < 256, suffix.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else {
            throw .invalidRevision("'\(rev)' has an empty, overlong or non-printable suffix")
        }
        return gen
    }

    /// The revision ID of a new revision: generation one more than the
    /// parent's; the suffix is the first 128 bits, in lowercase hex, of the
    /// SHA-1 of the canonical JSON body, a NUL, the deleted flag (`1`/`0`), a
    /// NUL and the parent revision ID (empty for a first revision). The same
    /// edit on two nodes yields the same ID. 32 hex digits is the length
    /// CouchDB reads as binary, so CouchDB, PouchDB and nodes order these
    /// suffixes alike (see ``wins(_:over:)``). The body comes first so its hashing can happen early (see
    /// ``CanonicalBody``).
    static func make(parent: String?, deleted: Bool, body: CanonicalBody) -> String {
        var hasher = body.digestState ?? {
            var fresh = Insecure.SHA1()
            fresh.update(data: body.json)
            return fresh
        }()
        withUnsafeBytes(of: (UInt8(0), deleted ? UInt8(ascii: "1") : UInt8(ascii: "0"), UInt8(0))) { hasher.update(bufferPointer: $0) }
        if var parent {
            parent.withUTF8 { hasher.update(bufferPointer: UnsafeRawBufferPointer($0)) }
        }
        let generation = String((parent.flatMap(generation(of:)) ?? 0) + 1)
        let digest = hasher.finalize()
        // Written in place: the ID is made for every saved revision.
        return String(unsafeUninitializedCapacity: generation.utf8.count + 33) { out in
            var n = 0
            for byte in generation.utf8 {
                out[n] = byte
                n += 1
            }
            out[n] = UInt8(ascii: "-")
            n += 1
            digest.withUnsafeBytes { bytes in
                for byte in bytes.prefix(16) {
                    out[n] = Hex.digits[Int(byte >> 4)]
                    out[n + 1] = Hex.digits[Int(byte & 0xF)]
                    n += 2
                }
            }
            return n
        }
    }

    /// The winner order, CouchDB's: a live revision beats a deleted one, then
    /// the higher generation, then the higher suffix in CouchDB's byte order
    /// (``suffixKey(_:)``).
    static func wins(_ a: (rev: String, deleted: Bool), over b: (rev: String, deleted: Bool)) -> Bool {
        if a.deleted != b.deleted { return !a.deleted }
        let ga = generation(of: a.rev) ?? 0, gb = generation(of: b.rev) ?? 0
        if ga != gb { return ga > gb }
        return suffixKey(b.rev).lexicographicallyPrecedes(suffixKey(a.rev))
    }

    /// The bytes CouchDB compares a suffix by: a suffix of exactly 32 hex
    /// digits (either case) is stored by CouchDB as the 16 bytes they spell,
    /// anything else as its own characters. Two 32-digit lowercase suffixes
    /// therefore compare as their text does (PouchDB's order too); a 32-digit
    /// suffix against another shape compares raw bytes against characters,
    /// exactly as CouchDB does, so every node picks CouchDB's winner.
    static func suffixKey(_ rev: String) -> [UInt8] {
        let utf8 = rev.utf8
        let start = utf8.firstIndex(of: UInt8(ascii: "-")).map { utf8.index(after: $0) } ?? utf8.startIndex
        let suffix = utf8[start...]
        guard suffix.count == 32 else { return Array(suffix) }
        var bytes = [UInt8]()
        bytes.reserveCapacity(16)
        var high: UInt8?
        for c in suffix {
            guard let nibble = Hex.value(c) else { return Array(suffix) }
            if let h = high {
                bytes.append(h << 4 | nibble)
                high = nil
            } else {
                high = nibble
            }
        }
        return bytes
    }
}
