/// Rewrites JSON text straight into canonical JSON (the exact bytes
/// `JSONWriter` writes for the parsed value) without building a value tree.
///
/// Bodies arriving as text (imports, and later the wire) take this path: it
/// allocates little and is several times faster than parse-then-write. Input
/// it does not handle byte-for-byte like the parser (non-ASCII object keys,
/// which Swift compares by canonical equivalence, and blob metadata) reports
/// `.needsValueTree`, and the caller falls back to the parser and writer.
struct JSONCanonicalizer: JSONScanning {
    enum Outcome {
        case canonical
        case needsValueTree
    }

    let input: UnsafeBufferPointer<UInt8>
    var pos = 0
    var depth = 0
    private var writer: JSONWriter
    private var fallback = false

    private init(input: UnsafeBufferPointer<UInt8>, capacity: Int) {
        self.input = input
        self.writer = JSONWriter(capacity: capacity)
    }

    /// Canonical bytes of a JSON object, and its top-level members whose names
    /// start with `_` (removed from the output; the caller decides what they mean).
    /// Nil when the text needs the value-tree path.
    static func canonicalObject(_ text: String) throws(StoreError) -> (bytes: [UInt8], reserved: [String: DocumentValue])? {
        try withBytes(of: text) { buffer throws(StoreError) in
            var c = JSONCanonicalizer(input: buffer, capacity: buffer.count)
            let reserved = try c.topLevelObject()
            return (c.fallback ? nil : (c.writer.bytes, reserved), c.pos)
        }
    }

    /// ``canonicalObject(_:)`` of the object at `start` inside a larger text (a document in a
    /// replication answer), read where it stands; also returns where the object ends. `scratch`
    /// is the output buffer, kept from one call to the next.
    static func canonicalObject(
        in input: UnsafeBufferPointer<UInt8>, at start: Int, scratch: inout [UInt8]
    ) throws(StoreError) -> (canonical: (bytes: [UInt8], reserved: [String: DocumentValue])?, end: Int) {
        var c = JSONCanonicalizer(input: input, capacity: 0)
        c.pos = start
        scratch.removeAll(keepingCapacity: true)
        swap(&scratch, &c.writer.bytes)
        defer { swap(&scratch, &c.writer.bytes) }
        let reserved = try c.topLevelObject()
        // A copy of its own, at its size (the scratch buffer goes on to the next document).
        return (c.fallback ? nil : (c.writer.bytes.withUnsafeBufferPointer { Array($0) }, reserved), c.pos)
    }

    private mutating func topLevelObject() throws(StoreError) -> [String: DocumentValue] {
        skipWhitespace()
        guard pos < input.count, input[pos] == UInt8(ascii: "{") else {
            throw StoreError.invalidJSON("a document body must be a JSON object")
        }
        return try object(topLevel: true)
    }

    private mutating func value() throws(StoreError) {
        skipWhitespace()
        guard pos < input.count else { throw error("unexpected end of input") }
        switch input[pos] {
        case UInt8(ascii: "{"): _ = try object(topLevel: false)
        case UInt8(ascii: "["): try array()
        case UInt8(ascii: "\""): try string()
        case UInt8(ascii: "t"): try literal("true")
        case UInt8(ascii: "f"): try literal("false")
        case UInt8(ascii: "n"): try literal("null")
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): try number()
        default: throw error("unexpected character '\(Character(Unicode.Scalar(input[pos])))'")
        }
    }

    private mutating func literal(_ text: StaticString) throws(StoreError) {
        try consumeLiteral(text)
        writer.bytes.append(contentsOf: UnsafeBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount))
    }

    private mutating func array() throws(StoreError) {
        try enter()
        pos += 1
        writer.bytes.append(UInt8(ascii: "["))
        skipWhitespace()
        if pos < input.count, input[pos] == UInt8(ascii: "]") {
            pos += 1
        } else {
            while true {
                try value()
                if try atEnd(of: .array) { break }
                writer.bytes.append(UInt8(ascii: ","))
            }
        }
        writer.bytes.append(UInt8(ascii: "]"))
        depth -= 1
    }

    private struct Member {
        /// The key's bytes between its quotes, in the output.
        var key: Range<Int>
        /// The whole `"key":value`, in the output.
        var whole: Range<Int>
    }

    /// Writes the object with sorted, deduplicated members. At the top level,
    /// members named `_...` are returned instead of written.
    private mutating func object(topLevel: Bool) throws(StoreError) -> [String: DocumentValue] {
        try enter()
        pos += 1
        let start = writer.bytes.count
        writer.bytes.append(UInt8(ascii: "{"))
        var members: [Member] = []
        members.reserveCapacity(16)  // one allocation for most objects, not one per doubling
        var reserved = [String: DocumentValue](minimumCapacity: topLevel ? 4 : 0)
        skipWhitespace()
        if pos < input.count, input[pos] == UInt8(ascii: "}") {
            pos += 1
        } else {
            while true {
                skipWhitespace()
                guard pos < input.count, input[pos] == UInt8(ascii: "\"") else { throw error("expected a property name") }
                let separatorStart = writer.bytes.count
                if !members.isEmpty { writer.bytes.append(UInt8(ascii: ",")) }
                let memberStart = writer.bytes.count
                try string()
                let key = (memberStart + 1)..<(writer.bytes.count - 1)
                if writer.bytes[key].contains(where: { $0 >= 0x80 || $0 == UInt8(ascii: "\\") }) { fallback = true }
                skipWhitespace()
                guard pos < input.count, input[pos] == UInt8(ascii: ":") else { throw error("expected ':'") }
                pos += 1
                writer.bytes.append(UInt8(ascii: ":"))
                if topLevel, writer.bytes[key.lowerBound] == UInt8(ascii: "_") {
                    let name = String(decoding: writer.bytes[key], as: UTF8.self)
                    writer.bytes.removeSubrange(separatorStart...)
                    reserved[name] = try reservedValue()
                } else {
                    try value()
                    members.append(Member(key: key, whole: memberStart..<writer.bytes.count))
                }
                if try atEnd(of: .object) { break }
            }
        }
        depth -= 1
        if isBlobMetadata(members) { fallback = true }
        reorder(members, objectStart: start)
        writer.bytes.append(UInt8(ascii: "}"))
        return reserved
    }

    /// A reserved member's value, parsed straight from the input (they are few and small: `_id`,
    /// `_rev`, `_revisions`...); nothing is written for it.
    private mutating func reservedValue() throws(StoreError) -> DocumentValue {
        let (value, end) = try JSONParser.parseValue(in: input, at: pos, depth: depth)
        pos = end
        return value
    }

    private static let blobTypeMember = Array(#""@type":"blob""#.utf8)

    private func isBlobMetadata(_ members: [Member]) -> Bool {
        members.contains { writer.bytes[$0.whole].elementsEqual(Self.blobTypeMember) }
    }

    /// Sorts members by key bytes; a repeated key keeps its last value, as the parser does.
    private mutating func reorder(_ members: [Member], objectStart: Int) {
        func less(_ a: Member, _ b: Member) -> Bool {
            writer.bytes[a.key].lexicographicallyPrecedes(writer.bytes[b.key])
        }
        var sortedAndUnique = true
        for i in members.indices.dropFirst() where !less(members[i - 1], members[i]) {
            sortedAndUnique = false
            break
        }
        if sortedAndUnique { return }
        // Stable sort keeps input order among equal keys, so the last of a run wins.
        let order = members.enumerated().sorted { a, b in
            less(a.element, b.element) || (!less(b.element, a.element) && a.offset < b.offset)
        }.map(\.element)
        var out: [UInt8] = []
        out.reserveCapacity(writer.bytes.count - objectStart + members.count)
        for (i, member) in order.enumerated() {
            if i + 1 < order.count, writer.bytes[order[i + 1].key].elementsEqual(writer.bytes[member.key]) { continue }
            if !out.isEmpty { out.append(UInt8(ascii: ",")) }
            out.append(contentsOf: writer.bytes[member.whole])
        }
        writer.bytes.replaceSubrange((objectStart + 1)..., with: out)
    }

    /// Copies a string as is when it needs no change, else decodes and re-escapes it.
    private mutating func string() throws(StoreError) {
        let start = pos
        pos += 1
        var plain = true
        while pos < input.count {
            pos = StringScan.firstSpecial(input, from: pos, to: input.count)
            guard pos < input.count else { break }
            let c = input[pos]
            if c == UInt8(ascii: "\"") {
                pos += 1
                if plain {
                    writer.bytes.append(contentsOf: UnsafeBufferPointer(rebasing: input[start..<pos]))
                } else {
                    // Rare: escapes. Let the parser decode and the writer re-encode.
                    let text = String(decoding: UnsafeBufferPointer(rebasing: input[start..<pos]), as: UTF8.self)
                    guard case .string(let s) = try JSONParser.parse(text) else { throw error("invalid string") }
                    writer.writeString(s)
                }
                return
            }
            if c < 0x20 { throw error("control character in string") }
            if c == UInt8(ascii: "\\") {
                plain = false
                pos += 1
            }
            pos += 1
        }
        throw error("unterminated string")
    }

    private mutating func number() throws(StoreError) {
        let start = pos
        guard let (end, isInteger) = JSONParser.scanNumber(input, from: pos) else { throw error("invalid number") }
        pos = end
        let token = UnsafeBufferPointer(rebasing: input[start..<pos])
        // An integer of up to 18 digits is written as it came (the scanner admits no leading
        // zero), but for -0, which is 0.
        if isInteger, token.count <= 18, !(token.count == 2 && token[0] == UInt8(ascii: "-") && token[1] == UInt8(ascii: "0")) {
            writer.bytes.append(contentsOf: token)
            return
        }
        let text = String(decoding: token, as: UTF8.self)
        if isInteger, let i = Int64(text) {
            writer.writeInteger(i)
            return
        }
        guard let d = Double(text), d.isFinite else { throw error("number out of range") }
        writer.writeDouble(d)
    }
}
