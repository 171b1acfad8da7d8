import Crypto
import Foundation

/// Revision IDs: `<generation>-<suffix>`. Ours have a hex SHA-1 suffix; those
/// made by other replicators are kept as they are and never renumbered.
enum RevisionID {
    /// The generation, or nil when `rev` is malformed.
    static func generation(of rev: String) -> Int? {
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
    /// parent's; the suffix is the hex SHA-1 of the canonical JSON body, a
    /// NUL, the deleted flag (`1`/`0`), a NUL and the parent revision ID
    /// (empty for a first revision). The same edit on two nodes yields the
    /// same ID. The body comes first so its hashing can happen early (see
    /// ``CanonicalBody``).
    static func make(parent: String?, deleted: Bool, body: CanonicalBody) -> String {
        var hasher = body.digestState
        var suffix: [UInt8] = [0, deleted ? UInt8(ascii: "1") : UInt8(ascii: "0"), 0]
        suffix.append(contentsOf: (parent ?? "").utf8)
        hasher.update(data: suffix)
        let gen = (parent.flatMap(generation(of:)) ?? 0) + 1
        return "\(gen)-" + hex(hasher.finalize())
    }

    private static let hexDigits: [UInt8] = Array("0123456789abcdef".utf8)

    private static func hex<D: Sequence>(_ bytes: D) -> String where D.Element == UInt8 {
        var out = [UInt8]()
        out.reserveCapacity(40)
        for b in bytes {
            out.append(hexDigits[Int(b >> 4)])
            out.append(hexDigits[Int(b & 0xF)])
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// The winner order of DESIGN.md §3: a live revision beats a deleted one,
    /// then the higher generation, then the higher ID in byte order.
    static func wins(_ a: (rev: String, deleted: Bool), over b: (rev: String, deleted: Bool)) -> Bool {
        if a.deleted != b.deleted { return !a.deleted }
        let ga = generation(of: a.rev) ?? 0, gb = generation(of: b.rev) ?? 0
        if ga != gb { return ga > gb }
        return b.rev.utf8.lexicographicallyPrecedes(a.rev.utf8)
    }
}
