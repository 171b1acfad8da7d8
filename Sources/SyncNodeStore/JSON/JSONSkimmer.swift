/// Finds values inside a large JSON text without building them: the texts
/// at a path such as `results[*].docs[*].ok` (a `_bulk_get` answer's
/// documents), left as text, so a caller can canonicalize them straight from
/// it. The whole text is checked for structure, strings and escapes; numbers'
/// ranges and surrogate pairs are left to whoever parses the values. Object
/// members are matched by their raw names (an escaped name never matches),
/// every occurrence of a repeated name counts.
package struct JSONSkimmer: JSONScanning {
    /// One step of a path.
    package enum Step: Sendable {
        /// The member of an object with this name (absent members yield nothing).
        case member(String)
        /// Every element of an array.
        case each
    }

    let input: UnsafeBufferPointer<UInt8>
    var pos = 0
    var depth = 0
    private var found: [Range<Int>] = []

    private init(input: UnsafeBufferPointer<UInt8>) {
        self.input = input
    }

    /// The texts of the values at `path` in document order. Values of another
    /// shape than the path expects (an object where it says `.each`) yield
    /// nothing; malformed JSON anywhere throws.
    package static func values(at path: [Step], in text: String) throws(StoreError) -> [String] {
        try withBytes(of: text) { buffer throws(StoreError) in
            var skimmer = JSONSkimmer(input: buffer)
            try skimmer.walk(path[...]) { _, _ throws(StoreError) in nil }
            return (skimmer.found.map { String(decoding: UnsafeBufferPointer(rebasing: buffer[$0]), as: UTF8.self) }, skimmer.pos)
        }
    }

    /// The values at `path` as `read` makes them where they stand, in one pass over the text:
    /// `read` gets the whole text's UTF-8 bytes and where a value starts, and returns what it
    /// made of it with where the value ends, or nil to leave that value out.
    package static func values<T>(
        at path: [Step], in text: String, _ read: (UnsafeBufferPointer<UInt8>, Int) throws(StoreError) -> (T, end: Int)?
    ) throws(StoreError) -> [T] {
        try withBytes(of: text) { buffer throws(StoreError) in
            var skimmer = JSONSkimmer(input: buffer)
            var values: [T] = []
            try skimmer.walk(path[...]) { input, start throws(StoreError) in
                guard let (value, end) = try read(input, start) else { return nil }
                values.append(value)
                return end
            }
            return (values, skimmer.pos)
        }
    }

    /// Where the value at `start` (`depth` levels deep) ends, its structure checked as `walk` checks it.
    static func end(ofValueIn input: UnsafeBufferPointer<UInt8>, at start: Int, depth: Int) throws(StoreError) -> Int {
        var skimmer = JSONSkimmer(input: input)
        skimmer.pos = start
        skimmer.depth = depth
        try skimmer.walk(nil) { _, _ throws(StoreError) in nil }
        return skimmer.pos
    }

    /// Steps over one value; `path` says where the wanted values are inside it (nil: nowhere).
    /// `visit` is offered each value found: it reads it and returns where it ends, or returns
    /// nil for the skimmer to step over it and note where it stands in `found`.
    private mutating func walk(
        _ path: ArraySlice<Step>?, _ visit: (UnsafeBufferPointer<UInt8>, Int) throws(StoreError) -> Int?
    ) throws(StoreError) {
        skipWhitespace()
        guard pos < input.count else { throw error("unexpected end of input") }
        if let path, path.isEmpty {
            let start = pos
            if let end = try visit(input, start) {
                pos = end
            } else {
                try walk(nil, visit)
                found.append(start..<pos)
            }
            return
        }
        switch input[pos] {
        case UInt8(ascii: "{"), UInt8(ascii: "["):
            let container: JSONContainer = input[pos] == UInt8(ascii: "{") ? .object : .array
            try enter()
            pos += 1
            skipWhitespace()
            if pos < input.count, input[pos] == container.close {
                pos += 1
            } else {
                repeat {
                    var inner: ArraySlice<Step>?
                    if container == .object {
                        skipWhitespace()
                        guard pos < input.count, input[pos] == UInt8(ascii: "\"") else { throw error("expected a property name") }
                        let keyStart = pos + 1
                        try skipString()
                        if case .member(let name)? = path?.first, keyMatches(name, keyStart..<pos - 1) { inner = path?.dropFirst() }
                        skipWhitespace()
                        guard pos < input.count, input[pos] == UInt8(ascii: ":") else { throw error("expected ':'") }
                        pos += 1
                    } else if case .each? = path?.first {
                        inner = path?.dropFirst()
                    }
                    try walk(inner, visit)
                } while try !atEnd(of: container)
            }
            depth -= 1
        case UInt8(ascii: "\""): try skipString()
        case UInt8(ascii: "t"): try consumeLiteral("true")
        case UInt8(ascii: "f"): try consumeLiteral("false")
        case UInt8(ascii: "n"): try consumeLiteral("null")
        default:
            guard let (end, _) = JSONParser.scanNumber(input, from: pos) else { throw error("invalid value") }
            pos = end
        }
    }

    /// Compares raw key bytes; an escaped key never matches (the names asked for are plain).
    private func keyMatches(_ name: String, _ range: Range<Int>) -> Bool {
        var name = name
        return name.withUTF8 { wanted in
            wanted.count == range.count && zip(wanted, input[range]).allSatisfy { $0 == $1 }
        }
    }

    /// Steps over `\x` or `\uXXXX`.
    private mutating func skipEscape() throws(StoreError) {
        guard pos + 1 < input.count else { throw error("unterminated string") }
        switch input[pos + 1] {
        case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"), UInt8(ascii: "b"), UInt8(ascii: "f"),
             UInt8(ascii: "n"), UInt8(ascii: "r"), UInt8(ascii: "t"):
            pos += 2
        case UInt8(ascii: "u"):
            guard pos + 6 <= input.count, input[(pos + 2)..<(pos + 6)].allSatisfy({ ($0 >= 0x30 && $0 <= 0x39) || ($0 | 0x20 >= 0x61 && $0 | 0x20 <= 0x66) }) else {
                throw error("invalid \\u escape")
            }
            pos += 6
        default:
            throw error("invalid escape")
        }
    }

    private mutating func skipString() throws(StoreError) {
        pos += 1
        while pos < input.count {
            pos = StringScan.firstSpecial(input, from: pos, to: input.count)
            guard pos < input.count else { break }
            switch input[pos] {
            case UInt8(ascii: "\""): pos += 1; return
            case UInt8(ascii: "\\"): try skipEscape()
            default: throw error("control character in string")
            }
        }
        throw error("unterminated string")
    }
}
