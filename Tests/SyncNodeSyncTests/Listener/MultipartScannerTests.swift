import Foundation
import Testing
@testable import SyncNodeSync

/// The multipart scanner gives the same parts however the body is cut into chunks: a
/// delimiter, a header block or a line break split across chunks is held back, not lost.
@Suite struct MultipartScannerTests {
    /// The parts of `body` fed in chunks of `size` bytes: each part's headers and bytes.
    static func parts(of body: [UInt8], boundary: String, chunk size: Int) throws -> (parts: [([String: String], [UInt8])], complete: Bool) {
        var scanner = MultipartScanner(boundary: boundary)
        var parts: [([String: String], [UInt8])] = []
        var current: ([String: String], [UInt8])?
        var start = 0
        while start < body.count {
            let piece = Array(body[start..<min(start + size, body.count)])
            try piece.withUnsafeBytes { bytes in
                try scanner.feed(bytes, headers: { current = ($0, []) }, body: { current?.1.append(contentsOf: $0) }, end: {
                    if let done = current { parts.append(done) }
                    current = nil
                })
            }
            start += size
        }
        return (parts, scanner.isComplete)
    }

    @Test func chunkingDoesNotChangeTheParts() throws {
        // Part bodies that hold near-delimiters: "--B" without CRLF, CRLF then "-B", a lone CR.
        let body = Array(("preamble\r\n--B\r\nContent-Type: application/json\r\n\r\n{\"a\":\"--B\"}\r\n--B\r\n"
            + "Content-Disposition: attachment; filename=\"x.bin\"\r\nContent-Length: 9\r\n\r\nab\r\n-B\r-\r\n--B\r\n\r\nno headers\r\n--B--\r\nepilogue").utf8)
        let whole = try Self.parts(of: body, boundary: "B", chunk: body.count)
        #expect(whole.complete)
        #expect(whole.parts.map(\.0) == [["content-type": "application/json"],
                                         ["content-disposition": "attachment; filename=\"x.bin\"", "content-length": "9"], [:]])
        #expect(whole.parts.map { String(decoding: $0.1, as: UTF8.self) } == ["{\"a\":\"--B\"}", "ab\r\n-B\r-", "no headers"])
        for size in [1, 2, 3, 5, 7, 13] {
            let cut = try Self.parts(of: body, boundary: "B", chunk: size)
            #expect(cut.complete && cut.parts.map(\.0) == whole.parts.map(\.0) && cut.parts.map(\.1) == whole.parts.map(\.1), "chunks of \(size)")
        }
    }

    /// Bodies dense with near-delimiters, cut at random: the same parts as when fed a byte at a
    /// time (which never takes the scanner's path for whole pieces of a body).
    @Test func randomCutsGiveTheSamePartsAsSingleBytes() throws {
        var random = SystemRandomNumberGenerator()
        let alphabet = Array("-B\r\nx".utf8)
        for _ in 0..<300 {
            var body = Array("--B\r\n".utf8)
            for part in 0..<Int.random(in: 1...4, using: &random) {
                if part > 0 { body += Array("\r\n--B\r\n".utf8) }
                body += Array("X: \(part)\r\n\r\n".utf8)
                // No CRLF--B inside: that would end the part, whatever the cuts.
                var content: [UInt8] = []
                for _ in 0..<Int.random(in: 0...40, using: &random) {
                    content.append(alphabet.randomElement(using: &random) ?? 120)
                    if content.suffix(5).elementsEqual(Array("\r\n--B".utf8)) { content.removeLast() }
                }
                body += content
            }
            body += Array("\r\n--B--".utf8)
            let single = try Self.parts(of: body, boundary: "B", chunk: 1)
            let size = Int.random(in: 2...24, using: &random)
            let cut = try Self.parts(of: body, boundary: "B", chunk: size)
            #expect(single.complete && cut.complete, "\(String(decoding: body, as: UTF8.self).debugDescription)")
            #expect(cut.parts.map(\.0) == single.parts.map(\.0) && cut.parts.map(\.1) == single.parts.map(\.1),
                    "chunks of \(size): \(String(decoding: body, as: UTF8.self).debugDescription)")
        }
    }

    @Test func malformedBodiesAreRefusedInWords() throws {
        for body in ["--B\r\nno colon here\r\n\r\nx\r\n--B--", "--Bjunk\r\n\r\nx\r\n--B--"] {
            #expect(throws: CouchError.self, "\(body)") { _ = try Self.parts(of: Array(body.utf8), boundary: "B", chunk: 1) }
        }
        let unfinished = try Self.parts(of: Array("--B\r\n\r\nx\r\n".utf8), boundary: "B", chunk: 1)
        #expect(!unfinished.complete, "no closing delimiter")
    }
}
