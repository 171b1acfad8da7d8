import Foundation

/// Splits a multipart body into parts as it arrives: each part's header lines, then its bytes
/// in pieces, then its end. Only the bytes that could still be the start of a delimiter are
/// held back, and a part's headers at most ``headerLimit`` bytes, so memory stays bounded
/// whatever the body's size.
struct MultipartScanner {
    /// A part's header lines may take this many bytes in all.
    static let headerLimit = 16 << 10

    private enum State { case preamble, afterDelimiter, headers, body, done }

    /// `CRLF--boundary`: what ends a part (the first delimiter may come without its CRLF).
    private let delimiter: [UInt8]
    /// Starts with CRLF so that a body beginning with `--boundary` is found like any delimiter.
    private var pending: [UInt8] = [13, 10]
    private var state = State.preamble

    /// The boundary of a `type; boundary="..."` content type (`type` being `multipart/related`,
    /// say), or nil for another type or none.
    static func boundary(of type: String, in contentType: String) -> String? {
        guard contentType.lowercased().hasPrefix(type) else { return nil }
        for parameter in contentType.split(separator: ";").dropFirst() {
            let pair = parameter.split(separator: "=", maxSplits: 1).map { trimmed($0) }
            if pair.count == 2, pair[0].lowercased() == "boundary" {
                return String(trimmed(pair[1]) { $0 == "\"" })
            }
        }
        return nil
    }

    /// `text` without the characters it begins or ends with that `isTrimmed`: by default a
    /// header's optional white space (spaces and tabs). Foundation's `trimmingCharacters(in:)`
    /// took 3.5% of a pull of many small attachments, a few calls for each part.
    static func trimmed(_ text: Substring, where isTrimmed: (Character) -> Bool = { $0 == " " || $0 == "\t" }) -> Substring {
        var text = text.drop(while: isTrimmed)
        while let last = text.last, isTrimmed(last) { text.removeLast() }
        return text
    }

    init(boundary: String) {
        delimiter = Array("\r\n--\(boundary)".utf8)
    }

    /// True once the closing delimiter (`--boundary--`) was read.
    var isComplete: Bool { state == .done }

    /// Reads the next bytes of the body.
    /// - Throws: `CouchError` 400 for a malformed body, or what the callbacks throw.
    mutating func feed(
        _ bytes: UnsafeRawBufferPointer,
        headers: ([String: String]) throws -> Void, body: (UnsafeRawBufferPointer) throws -> Void, end: () throws -> Void
    ) throws {
        guard state != .done else { return }
        var input = bytes
        if state == .body {
            switch try feedBody(bytes, body: body, end: end) {
            case .taken: return
            case .ended(let after): input = after
            case .general: break
            }
        }
        pending.append(contentsOf: input)
        while true {
            switch state {
            case .preamble:
                guard let at = Self.find(delimiter, in: pending) else {
                    pending.removeFirst(max(0, pending.count - (delimiter.count - 1)))
                    return
                }
                pending.removeFirst(at + delimiter.count)
                state = .afterDelimiter
            case .afterDelimiter:
                guard pending.count >= 2 else { return }
                if pending[0] == UInt8(ascii: "-"), pending[1] == UInt8(ascii: "-") {
                    state = .done
                    pending = []
                    return
                }
                guard pending[0] == 13, pending[1] == 10 else { throw CouchError.badRequest("malformed multipart body: a delimiter is not followed by a line break") }
                pending.removeFirst(2)
                state = .headers
            case .headers:
                let blank: Int
                if pending.count >= 2, pending[0] == 13, pending[1] == 10 {
                    blank = 0   // a part without headers
                } else if let at = Self.find([13, 10, 13, 10], in: pending) {
                    blank = at + 2
                } else {
                    guard pending.count <= Self.headerLimit else { throw CouchError.badRequest("malformed multipart body: a part's headers exceed \(Self.headerLimit) bytes") }
                    return
                }
                guard blank <= Self.headerLimit else { throw CouchError.badRequest("malformed multipart body: a part's headers exceed \(Self.headerLimit) bytes") }
                var fields: [String: String] = [:]
                for line in String(decoding: pending[..<blank], as: UTF8.self).split(separator: "\r\n") {
                    let pair = line.split(separator: ":", maxSplits: 1)
                    guard pair.count == 2 else { throw CouchError.badRequest("malformed multipart body: a header line without a colon") }
                    fields[Self.trimmed(pair[0]).lowercased()] = String(Self.trimmed(pair[1]))
                }
                pending.removeFirst(blank + 2)
                try headers(fields)
                state = .body
            case .body:
                if let at = Self.find(delimiter, in: pending) {
                    if at > 0 { try pending.withUnsafeBytes { try body(UnsafeRawBufferPointer(rebasing: $0[..<at])) } }
                    pending.removeFirst(at + delimiter.count)
                    try end()
                    state = .afterDelimiter
                } else {
                    let safe = pending.count - (delimiter.count - 1)
                    if safe > 0 {
                        try pending.withUnsafeBytes { try body(UnsafeRawBufferPointer(rebasing: $0[..<safe])) }
                        pending.removeFirst(safe)
                    }
                    return
                }
            case .done:
                return
            }
        }
    }

    private enum BodyFeed {
        /// Every byte was taken (the last few held back, as ever).
        case taken
        /// The part ended: these bytes follow its delimiter.
        case ended(after: UnsafeRawBufferPointer)
        /// The general path must take them.
        case general
    }

    /// Inside a part's body: its bytes go to `body` straight from `bytes`, not through
    /// `pending` (a copy of every byte, at each level of a nested multipart body). Only when a
    /// delimiter may start in the bytes held back, or too few arrived to tell, does the
    /// general path take them.
    private mutating func feedBody(
        _ bytes: UnsafeRawBufferPointer, body: (UnsafeRawBufferPointer) throws -> Void, end: () throws -> Void
    ) throws -> BodyFeed {
        let length = delimiter.count
        guard bytes.count >= length - 1 else { return .general }
        if !pending.isEmpty {
            // A delimiter that starts in the held-back bytes ends within this many of the new ones.
            let seam = pending + bytes.prefix(length - 1)
            if let at = Self.find(delimiter, in: seam), at < pending.count { return .general }
            try pending.withUnsafeBytes { try body($0) }
            pending.removeAll(keepingCapacity: true)
        }
        if let at = Self.find(delimiter, in: bytes) {
            if at > 0 { try body(UnsafeRawBufferPointer(rebasing: bytes[..<at])) }
            try end()
            state = .afterDelimiter
            return .ended(after: UnsafeRawBufferPointer(rebasing: bytes[(at + length)...]))
        }
        let safe = bytes.count - (length - 1)
        if safe > 0 { try body(UnsafeRawBufferPointer(rebasing: bytes[..<safe])) }
        pending.append(contentsOf: bytes[safe...])
        return .taken
    }

    /// Where `needle` first starts in `haystack`: candidates by memchr on its first byte, then memcmp.
    private static func find(_ needle: [UInt8], in haystack: [UInt8]) -> Int? {
        haystack.withUnsafeBytes { find(needle, in: $0) }
    }

    private static func find(_ needle: [UInt8], in h: UnsafeRawBufferPointer) -> Int? {
        needle.withUnsafeBytes { n in
            guard let hb = h.baseAddress, let nb = n.baseAddress, n.count > 0, h.count >= n.count else { return nil }
            let first = Int32(n[0])
            var offset = 0
            while offset + n.count <= h.count {
                guard let hit = memchr(hb + offset, first, h.count - offset - n.count + 1) else { return nil }
                let position = hb.distance(to: UnsafeRawPointer(hit))
                if memcmp(hb + position, nb, n.count) == 0 { return position }
                offset = position + 1
            }
            return nil
        }
    }
}
