/// The part of a JSON object that a query looks at: the members at the key paths it reads,
/// copied as they stand (names and values byte for byte, in document order, a repeated name
/// every time it appears), so that SQLite's JSON functions find in the projection exactly
/// what they would find in the whole text.
///
/// SQLite's JSON functions keep the last few texts they parsed for as long as their statement
/// runs. A query that scans a collection of 50 MB documents would hold four of them; over the
/// projection it holds four small objects (see `QueryCompiler`).
package struct JSONProjection: Sendable, Equatable {
    /// Below this size a text is used as it is: parsing it whole costs little.
    static let minimumSize = 32 << 10

    /// True to keep the whole value.
    private var whole = false
    /// What to keep of each member, by its (unescaped) name.
    private var members: [String: JSONProjection] = [:]

    /// Keeps the values at `paths` (each a list of member names from the top); an empty path
    /// keeps everything.
    package init(paths: [[String]]) {
        for path in paths { insert(path[...]) }
    }

    private init() {}

    private mutating func insert(_ path: ArraySlice<String>) {
        guard !whole else { return }
        guard let first = path.first else {
            whole = true
            members = [:]
            return
        }
        var child = members[first] ?? JSONProjection()
        child.insert(path.dropFirst())
        members[first] = child
    }

    /// The paths, as `init(paths:)` takes them: what the query compiler writes into its SQL.
    var paths: [[String]] {
        if whole { return [[]] }
        return members.keys.sorted().flatMap { name in members[name, default: .init()].paths.map { [name] + $0 } }
    }

    /// The projection of the JSON object `text`; a value that is not an object comes back whole.
    /// - Throws: ``StoreError/invalidJSON(_:)`` for malformed JSON.
    package func project(_ text: UnsafeBufferPointer<UInt8>) throws(StoreError) -> [UInt8] {
        var projector = Projector(input: text)
        projector.skipWhitespace()
        guard !whole, projector.pos < text.count, text[projector.pos] == UInt8(ascii: "{") else { return Array(text) }
        try projector.object(keeping: self)
        return projector.output
    }

    private struct Projector: JSONScanning {
        let input: UnsafeBufferPointer<UInt8>
        var pos = 0
        var depth = 0
        var output: [UInt8] = []

        /// Copies the wanted members of the object at `pos`, and steps past it.
        mutating func object(keeping keep: JSONProjection) throws(StoreError) {
            try enter()
            pos += 1
            output.append(UInt8(ascii: "{"))
            var first = true
            skipWhitespace()
            if pos < input.count, input[pos] == UInt8(ascii: "}") {
                pos += 1
            } else {
                repeat {
                    skipWhitespace()
                    guard pos < input.count, input[pos] == UInt8(ascii: "\"") else { throw error("expected a property name") }
                    let name = pos..<(try JSONSkimmer.end(ofValueIn: input, at: pos, depth: depth))
                    pos = name.upperBound
                    skipWhitespace()
                    guard pos < input.count, input[pos] == UInt8(ascii: ":") else { throw error("expected ':'") }
                    pos += 1
                    skipWhitespace()
                    guard let inner = try keep.members[memberName(name)] else {
                        pos = try JSONSkimmer.end(ofValueIn: input, at: pos, depth: depth)
                        continue
                    }
                    if !first { output.append(UInt8(ascii: ",")) }
                    first = false
                    output.append(contentsOf: input[name])
                    output.append(UInt8(ascii: ":"))
                    if !inner.whole && !(pos < input.count && input[pos] == UInt8(ascii: "{")) {
                        // A path on into a value that is no object finds nothing, in `null` as there;
                        // the member stays, in case the name comes again (the first one counts).
                        output.append(contentsOf: "null".utf8)
                        pos = try JSONSkimmer.end(ofValueIn: input, at: pos, depth: depth)
                    } else if inner.whole {
                        let end = try JSONSkimmer.end(ofValueIn: input, at: pos, depth: depth)
                        output.append(contentsOf: input[pos..<end])
                        pos = end
                    } else {
                        try object(keeping: inner)
                    }
                } while try !atEnd(of: .object)
            }
            depth -= 1
            output.append(UInt8(ascii: "}"))
        }

        /// The name in the quoted text at `range`, unescaped (rarely needed: most names have no escape).
        private func memberName(_ range: Range<Int>) throws(StoreError) -> String {
            let raw = input[(range.lowerBound + 1)..<(range.upperBound - 1)]
            guard raw.contains(UInt8(ascii: "\\")) else { return String(decoding: raw, as: UTF8.self) }
            guard case .string(let name) = try JSONParser.parseValue(in: input, at: range.lowerBound, depth: depth).0 else { return "" }
            return name
        }
    }
}
