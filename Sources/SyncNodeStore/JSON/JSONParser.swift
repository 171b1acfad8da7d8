import Foundation

/// A strict RFC 8259 parser into ``DocumentValue``.
///
/// Hand-written rather than `JSONSerialization` because it must keep integers
/// and doubles apart, turn blob metadata into ``Blob`` values bound to the
/// database's blob store, bound nesting depth for hostile input, and it sits
/// on the document read path where speed matters.
package struct JSONParser: JSONScanning {
    let input: UnsafeBufferPointer<UInt8>
    var pos = 0
    var depth = 0
    private let blobStore: BlobStore?
    /// Members of the objects being parsed, innermost last: each object's dictionary is
    /// made once at its full size, instead of growing (and rehashing) as members arrive.
    private var members: [(key: String, value: DocumentValue)] = []

    private init(input: UnsafeBufferPointer<UInt8>, blobStore: BlobStore?) {
        self.input = input
        self.blobStore = blobStore
    }

    /// A parser for a value inside a larger text, `depth` levels deep.
    private init(inside input: UnsafeBufferPointer<UInt8>, at start: Int, depth: Int) {
        self.init(input: input, blobStore: nil)
        pos = start
        self.depth = depth
    }

    /// Parses one JSON value filling the whole text.
    static func parse(_ text: String, blobStore: BlobStore? = nil) throws(StoreError) -> DocumentValue {
        try withBytes(of: text) { buffer throws(StoreError) in
            var parser = JSONParser(input: buffer, blobStore: blobStore)
            return (try parser.parseValue(), parser.pos)
        }
    }

    /// Parses the value at `start` inside a larger text, `depth` levels deep; returns it and where it ends.
    package static func parseValue(in input: UnsafeBufferPointer<UInt8>, at start: Int, depth: Int) throws(StoreError) -> (DocumentValue, end: Int) {
        var parser = JSONParser(inside: input, at: start, depth: depth)
        return (try parser.parseValue(), parser.pos)
    }

    /// Runs `read` over the UTF-8 bytes of `text`, which must be one JSON value and nothing after
    /// it: `read` is given where the value starts and returns what it made and where it ends.
    package static func reading<T>(
        _ text: String, _ read: (UnsafeBufferPointer<UInt8>, Int) throws(StoreError) -> (T, end: Int)
    ) throws(StoreError) -> T {
        try withBytes(of: text) { buffer throws(StoreError) in try read(buffer, 0) }
    }

    /// Reads the object at `start` one member at a time, without making it: `member` is given
    /// each name and where its value starts, and returns where that value ends (having read it,
    /// with ``parseValue(in:at:depth:)`` or these readers). Returns where the object ends.
    package static func members(
        ofObjectIn input: UnsafeBufferPointer<UInt8>, at start: Int, depth: Int, _ member: (String, Int) throws(StoreError) -> Int
    ) throws(StoreError) -> Int {
        var parser = JSONParser(inside: input, at: start, depth: depth)
        try parser.container(.object) { parser throws(StoreError) in
            parser.skipWhitespace()
            guard parser.pos < input.count, input[parser.pos] == UInt8(ascii: "\"") else { throw parser.error("expected a property name") }
            let name = try parser.parseString()
            parser.skipWhitespace()
            guard parser.pos < input.count, input[parser.pos] == UInt8(ascii: ":") else { throw parser.error("expected ':'") }
            parser.pos += 1
            parser.skipWhitespace()
            parser.pos = try member(name, parser.pos)
        }
        return parser.pos
    }

    /// Reads the array at `start` one element at a time, as ``members(ofObjectIn:at:depth:_:)``
    /// reads an object: `element` is given where each starts and returns where it ends.
    package static func elements(
        ofArrayIn input: UnsafeBufferPointer<UInt8>, at start: Int, depth: Int, _ element: (Int) throws(StoreError) -> Int
    ) throws(StoreError) -> Int {
        var parser = JSONParser(inside: input, at: start, depth: depth)
        try parser.container(.array) { parser throws(StoreError) in
            parser.skipWhitespace()
            parser.pos = try element(parser.pos)
        }
        return parser.pos
    }

    /// Steps into the container at `pos`, calls `each` for every entry, and steps out of it.
    private mutating func container(_ kind: JSONContainer, _ each: (inout JSONParser) throws(StoreError) -> Void) throws(StoreError) {
        skipWhitespace()
        guard pos < input.count, input[pos] == (kind == .object ? UInt8(ascii: "{") : UInt8(ascii: "[")) else {
            throw error("expected an \(kind.name)")
        }
        try enter()
        pos += 1
        skipWhitespace()
        if pos < input.count, input[pos] == kind.close {
            pos += 1
        } else {
            repeat {
                try each(&self)
            } while try !atEnd(of: kind)
        }
        depth -= 1
    }

    /// Parses a JSON object, as document bodies must be.
    static func parseObject(_ text: String, blobStore: BlobStore? = nil) throws(StoreError) -> [String: DocumentValue] {
        guard case .dictionary(let d) = try parse(text, blobStore: blobStore) else {
            throw StoreError.invalidJSON("a document body must be a JSON object")
        }
        return d
    }

    private mutating func parseValue() throws(StoreError) -> DocumentValue {
        skipWhitespace()
        guard pos < input.count else { throw error("unexpected end of input") }
        switch input[pos] {
        case UInt8(ascii: "{"): return try parseObjectValue()
        case UInt8(ascii: "["): return try parseArray()
        case UInt8(ascii: "\""): return .string(try parseString())
        case UInt8(ascii: "t"): try consumeLiteral("true"); return .bool(true)
        case UInt8(ascii: "f"): try consumeLiteral("false"); return .bool(false)
        case UInt8(ascii: "n"): try consumeLiteral("null"); return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return try parseNumber()
        default: throw error("unexpected character '\(Character(Unicode.Scalar(input[pos])))'")
        }
    }

    private mutating func parseObjectValue() throws(StoreError) -> DocumentValue {
        try enter()
        pos += 1
        skipWhitespace()
        if pos < input.count, input[pos] == UInt8(ascii: "}") {
            pos += 1
            depth -= 1
            return .dictionary([:])
        }
        let first = members.count
        while true {
            skipWhitespace()
            guard pos < input.count, input[pos] == UInt8(ascii: "\"") else { throw error("expected a property name") }
            let key = try parseString()
            skipWhitespace()
            guard pos < input.count, input[pos] == UInt8(ascii: ":") else { throw error("expected ':'") }
            pos += 1
            let value = try parseValue()
            members.append((key, value))
            if try atEnd(of: .object) { break }
        }
        depth -= 1
        var dict = [String: DocumentValue](minimumCapacity: members.count - first)
        for (key, value) in members[first...] { dict[key] = value }  // a repeated key: the last wins
        members.removeSubrange(first...)
        if case .string("blob")? = dict[Blob.typeKey], dict.keys.allSatisfy(Blob.metadataKeys.contains),
           let blob = Blob(metadata: dict, store: blobStore) {
            return .blob(blob)
        }
        return .dictionary(dict)
    }

    private mutating func parseArray() throws(StoreError) -> DocumentValue {
        try enter()
        pos += 1
        var array: [DocumentValue] = []
        skipWhitespace()
        if pos < input.count, input[pos] == UInt8(ascii: "]") {
            pos += 1
            depth -= 1
            return .array(array)
        }
        while true {
            array.append(try parseValue())
            if try atEnd(of: .array) { break }
        }
        depth -= 1
        return .array(array)
    }

    private mutating func parseString() throws(StoreError) -> String {
        pos += 1  // opening quote
        let start = pos
        // Fast path: no escapes.
        while pos < input.count {
            pos = StringScan.firstSpecial(input, from: pos, to: input.count)
            guard pos < input.count else { break }
            let c = input[pos]
            if c == UInt8(ascii: "\"") {
                let s = String(decoding: UnsafeBufferPointer(rebasing: input[start..<pos]), as: UTF8.self)
                pos += 1
                return s
            }
            if c == UInt8(ascii: "\\") { break }
            if c < 0x20 { throw error("control character in string") }
            pos += 1
        }
        var bytes = Array(input[start..<pos])
        while pos < input.count {
            let c = input[pos]
            switch c {
            case UInt8(ascii: "\""):
                pos += 1
                return String(decoding: bytes, as: UTF8.self)
            case UInt8(ascii: "\\"):
                pos += 1
                guard pos < input.count else { throw error("unterminated string") }
                let e = input[pos]
                pos += 1
                switch e {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): bytes.append(e)
                case UInt8(ascii: "n"): bytes.append(0x0A)
                case UInt8(ascii: "r"): bytes.append(0x0D)
                case UInt8(ascii: "t"): bytes.append(0x09)
                case UInt8(ascii: "b"): bytes.append(0x08)
                case UInt8(ascii: "f"): bytes.append(0x0C)
                case UInt8(ascii: "u"):
                    var scalar = try parseHex4()
                    if (0xD800...0xDBFF).contains(scalar) {
                        guard pos + 1 < input.count, input[pos] == UInt8(ascii: "\\"), input[pos + 1] == UInt8(ascii: "u") else {
                            throw error("unpaired surrogate")
                        }
                        pos += 2
                        let low = try parseHex4()
                        guard (0xDC00...0xDFFF).contains(low) else { throw error("unpaired surrogate") }
                        scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                    } else if (0xDC00...0xDFFF).contains(scalar) {
                        throw error("unpaired surrogate")
                    }
                    guard let u = Unicode.Scalar(scalar) else { throw error("invalid \\u escape") }
                    bytes.append(contentsOf: Array(String(Character(u)).utf8))
                default: throw error("invalid escape")
                }
            default:
                if c < 0x20 { throw error("control character in string") }
                bytes.append(c)
                pos += 1
            }
        }
        throw error("unterminated string")
    }

    private mutating func parseHex4() throws(StoreError) -> UInt32 {
        guard pos + 4 <= input.count else { throw error("truncated \\u escape") }
        var v: UInt32 = 0
        for _ in 0..<4 {
            let c = input[pos]
            let d: UInt32
            switch c {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): d = UInt32(c - UInt8(ascii: "0"))
            case UInt8(ascii: "a")...UInt8(ascii: "f"): d = UInt32(c - UInt8(ascii: "a") + 10)
            case UInt8(ascii: "A")...UInt8(ascii: "F"): d = UInt32(c - UInt8(ascii: "A") + 10)
            default: throw error("invalid \\u escape")
            }
            v = v << 4 | d
            pos += 1
        }
        return v
    }

    private mutating func parseNumber() throws(StoreError) -> DocumentValue {
        let start = pos
        guard let (end, isInteger) = Self.scanNumber(input, from: pos) else {
            pos = start
            throw error("invalid number")
        }
        pos = end
        let text = String(decoding: UnsafeBufferPointer(rebasing: input[start..<pos]), as: UTF8.self)
        if isInteger, let i = Int64(text) { return .int(i) }
        guard let d = Double(text), d.isFinite else { throw error("number out of range") }
        return (try? DocumentValue.number(d)) ?? .double(d)
    }

    /// The end of the JSON number token at `start` and whether it is an
    /// integer (no fraction or exponent); nil when it is malformed.
    static func scanNumber(_ input: UnsafeBufferPointer<UInt8>, from start: Int) -> (end: Int, isInteger: Bool)? {
        func isDigit(_ i: Int) -> Bool { i < input.count && input[i] >= UInt8(ascii: "0") && input[i] <= UInt8(ascii: "9") }
        var pos = start
        var isInteger = true
        if pos < input.count, input[pos] == UInt8(ascii: "-") { pos += 1 }
        guard isDigit(pos) else { return nil }
        if input[pos] == UInt8(ascii: "0") {
            pos += 1
        } else {
            while isDigit(pos) { pos += 1 }
        }
        if pos < input.count, input[pos] == UInt8(ascii: ".") {
            isInteger = false
            pos += 1
            guard isDigit(pos) else { return nil }
            while isDigit(pos) { pos += 1 }
        }
        if pos < input.count, input[pos] == UInt8(ascii: "e") || input[pos] == UInt8(ascii: "E") {
            isInteger = false
            pos += 1
            if pos < input.count, input[pos] == UInt8(ascii: "+") || input[pos] == UInt8(ascii: "-") { pos += 1 }
            guard isDigit(pos) else { return nil }
            while isDigit(pos) { pos += 1 }
        }
        return (pos, isInteger)
    }
}
