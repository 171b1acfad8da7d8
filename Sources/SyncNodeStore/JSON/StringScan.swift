/// Finds the end of a plain run in a JSON string: the first byte that is a
/// quote, a backslash or a control character. Eight bytes at a time (SWAR),
/// since string contents are most of a document's bytes.
enum StringScan {
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
}
