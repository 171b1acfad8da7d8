/// The two JSON containers, for ``JSONScanning/atEnd(of:)``.
enum JSONContainer {
    case array, object
    var name: String { self == .array ? "array" : "object" }
    var close: UInt8 { self == .array ? UInt8(ascii: "]") : UInt8(ascii: "}") }
}

/// The scanning both JSON readers share: the parser (text to values) and the
/// canonicalizer (text to canonical text).
protocol JSONScanning {
    var input: UnsafeBufferPointer<UInt8> { get }
    var pos: Int { get set }
    var depth: Int { get set }
}

extension JSONScanning {
    /// Deeper input is rejected rather than risking the stack.
    static var maxDepth: Int { 256 }

    func error(_ what: String) -> StoreError {
        StoreError.invalidJSON("\(what) at byte \(pos)")
    }

    mutating func skipWhitespace() {
        while pos < input.count {
            switch input[pos] {
            case 0x20, 0x0A, 0x0D, 0x09: pos += 1
            default: return
            }
        }
    }

    /// Steps over `literal` (`true`, `false`, `null`) or throws.
    mutating func consumeLiteral(_ literal: StaticString) throws(StoreError) {
        let count = literal.utf8CodeUnitCount
        guard pos + count <= input.count else { throw error("unexpected end of input") }
        for i in 0..<count where input[pos + i] != literal.utf8Start[i] { throw error("invalid literal") }
        pos += count
    }

    /// After an array element or object member: steps over the `,` that
    /// announces another (false) or the closing `]`/`}` (true).
    mutating func atEnd(of container: JSONContainer) throws(StoreError) -> Bool {
        skipWhitespace()
        guard pos < input.count else { throw error("unterminated \(container.name)") }
        switch input[pos] {
        case UInt8(ascii: ","): pos += 1; return false
        case container.close: pos += 1; return true
        default: throw error("expected ',' or '\(Character(Unicode.Scalar(container.close)))'")
        }
    }

    /// One level deeper into arrays and objects.
    mutating func enter() throws(StoreError) {
        depth += 1
        if depth > Self.maxDepth { throw error("nesting deeper than \(Self.maxDepth) levels") }
    }

    /// Runs `body` over the UTF-8 bytes of `text`, which must be one JSON value and nothing after it.
    static func withBytes<T>(
        of text: String, _ body: (UnsafeBufferPointer<UInt8>) throws(StoreError) -> (T, end: Int)
    ) throws(StoreError) -> T {
        var text = text
        let result: Swift.Result<T, StoreError> = text.withUTF8 { buffer in
            do throws(StoreError) {
                var (value, end) = try body(buffer)
                while end < buffer.count, [0x20, 0x0A, 0x0D, 0x09].contains(buffer[end]) { end += 1 }
                guard end == buffer.count else { throw StoreError.invalidJSON("unexpected data after the JSON value at byte \(end)") }
                return .success(value)
            } catch {
                return .failure(error)
            }
        }
        return try result.get()
    }
}
