import Foundation

/// Byte scans over JSON text. ``firstSpecial(_:from:to:)`` finds the end of a
/// plain run in a JSON string: the first byte that is a quote, a backslash or
/// a control character, eight bytes at a time (SWAR), since string contents
/// are most of a document's bytes.
package enum StringScan {
    private static let ones: UInt64 = 0x0101_0101_0101_0101
    private static let highs: UInt64 = 0x8080_8080_8080_8080

    /// The index of the first special byte at or after `start`, or `end`.
    @inline(__always)
    static func firstSpecial(_ input: UnsafeBufferPointer<UInt8>, from start: Int, to end: Int) -> Int {
        guard let base = input.baseAddress else { return end }
        var i = start
        while i + 8 <= end {
            let word = UnsafeRawPointer(base + i).loadUnaligned(as: UInt64.self)
            if hasSpecial(word) {
                for j in i..<(i + 8) where isSpecial(base[j]) { return j }
            }
            i += 8
        }
        while i < end {
            if isSpecial(base[i]) { return i }
            i += 1
        }
        return end
    }

    @inline(__always)
    private static func isSpecial(_ c: UInt8) -> Bool {
        c == UInt8(ascii: "\"") || c == UInt8(ascii: "\\") || c < 0x20
    }

    /// True when some byte is `"`, `\` or below 0x20 (may say true for
    /// nothing, never false for something: the byte loop decides).
    @inline(__always)
    private static func hasSpecial(_ w: UInt64) -> Bool {
        let quote = w ^ (ones &* 0x22)
        let backslash = w ^ (ones &* 0x5C)
        let control = (w &- ones &* 0x20) & ~w
        let zeroQuote = (quote &- ones) & ~quote
        let zeroBackslash = (backslash &- ones) & ~backslash
        return (control | zeroQuote | zeroBackslash) & highs != 0
    }

    /// Substring search on UTF-8 bytes (Foundation's `contains` bridges on Linux and is slow).
    /// Candidates are found by the needle's second byte: the needles here start
    /// with `"`, the commonest byte of any JSON text, and memchr on it would stop everywhere.
    package static func contains(_ text: String, _ needle: StaticString) -> Bool {
        var text = text
        return text.withUTF8 { contains($0, needle) }
    }

    /// ``contains(_:_:)-(String,_)`` over bytes.
    package static func contains(_ haystack: UnsafeBufferPointer<UInt8>, _ needle: StaticString) -> Bool {
        let n = needle.utf8CodeUnitCount
        guard let base = haystack.baseAddress, n > 1, haystack.count >= n else { return false }
        let anchor = Int32(needle.utf8Start[1])
        var offset = 1
        while offset + n - 1 <= haystack.count {
            guard let hit = memchr(base + offset, anchor, haystack.count - offset - n + 2) else { return false }
            let position = UnsafeRawPointer(hit) - UnsafeRawPointer(base) - 1
            if memcmp(base + position, needle.utf8Start, n) == 0 { return true }
            offset = position + 2
        }
        return false
    }
}
