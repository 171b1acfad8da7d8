import Foundation
import Testing
@testable import SyncNodeStore

/// The text canonicalizer must produce exactly the bytes of parse-then-write,
/// or revision IDs would depend on how a body arrived.
@Suite struct CanonicalJSONTests {
    /// Random JSON text with the variations canonicalization must undo.
    struct Generator {
        var rng: SeededRandom

        mutating func pick<T>(_ items: [T]) -> T { items[Int(rng.next() % UInt64(items.count))] }
        mutating func ws() -> String { pick(["", "", " ", "\n\t ", "  "]) }

        mutating func key() -> String {
            pick(["a", "b", "B", "a1", "key", "k", "zz", "_x", "@type", "a b", "q\\\"uote", "tab\\t", "uni\\u00e9", "é", "aa", ""])
        }

        mutating func scalar() -> String {
            pick(["0", "-0", "1", "-17", "1.0", "2.50", "1e3", "1E-2", "-0.0", "123456789012345678901", "9007199254740993",
                  "3.14159", "true", "false", "null", "\"\"", "\"plain\"", "\"esc \\n \\\" \\\\ \\/ \\u0041 \\ud83d\\ude00\"",
                  "\"ctl \\u0001\"", "\"é ünï\"", "1.5e300", "-2E+2"])
        }

        mutating func value(depth: Int) -> String {
            switch depth > 3 ? 0 : rng.next() % 4 {
            case 1: return object(depth: depth + 1)
            case 2:
                let n = Int(rng.next() % 4)
                return "[" + (0..<n).map { _ in ws() + value(depth: depth + 1) + ws() }.joined(separator: ",") + "]"
            default: return scalar()
            }
        }

        mutating func object(depth: Int) -> String {
            let n = Int(rng.next() % 6)
            let members = (0..<n).map { _ in ws() + "\"" + key() + "\"" + ws() + ":" + ws() + value(depth: depth) + ws() }
            return "{" + members.joined(separator: ",") + "}"
        }
    }

    @Test func canonicalizerMatchesParseThenWrite() throws {
        var gen = Generator(rng: SeededRandom(seed: 2026))
        var fastPath = 0
        for _ in 0..<5000 {
            let text = gen.object(depth: 0)
            var values = try JSONParser.parseObject(text)
            var expectedReserved: [String: DocumentValue] = [:]
            for key in values.keys where key.hasPrefix("_") { expectedReserved[key] = values.removeValue(forKey: key) }
            let expected = JSONWriter.string(object: values)
            if let (bytes, reserved) = try JSONCanonicalizer.canonicalObject(text) {
                fastPath += 1
                #expect(String(decoding: bytes, as: UTF8.self) == expected, "input: \(text)")
                #expect(reserved == expectedReserved, "input: \(text)")
            }
            let (body, reserved) = try CanonicalBody.parse(objectJSON: text)
            #expect(body.text == expected, "input: \(text)")
            #expect(reserved == expectedReserved)
        }
        // Most inputs must take the fast path, or the test proves little.
        #expect(fastPath > 1500)
    }

    /// A replication answer's documents are canonicalized where they stand in it: the same
    /// bytes and reserved members as each document's own text gives, fallbacks included.
    @Test func documentsReadInsideAnAnswerMatchTheirOwnText() throws {
        var gen = Generator(rng: SeededRandom(seed: 2027))
        let texts = (0..<600).map { _ in gen.object(depth: 0) }
        // Shaped like a `_bulk_get` answer, with values on the path that are not objects.
        let answer = #"{"results":["# + texts.map { #"{"id":"x","docs":[{"ok":\#($0)},{"ok":7}]}"# }.joined(separator: ",\n") + "]}"
        let path: [JSONSkimmer.Step] = [.member("results"), .each, .member("docs"), .each, .member("ok")]
        var scratch: [UInt8] = []
        scratch.reserveCapacity(64 * 1024)  // as the replicator keeps it
        let read = try JSONSkimmer.values(at: path, in: answer) { input, start throws(StoreError) -> ((CanonicalBody, [String: DocumentValue]), end: Int)? in
            guard input[start] == UInt8(ascii: "{") else { return nil }
            let (body, reserved, end) = try CanonicalBody.parse(objectIn: input, at: start, scratch: &scratch)
            return ((body, reserved), end)
        }
        #expect(read.count == texts.count)
        for (text, (body, reserved)) in zip(texts, read) {
            let (expected, expectedReserved) = try CanonicalBody.parse(objectJSON: text)
            #expect(body.bytes == expected.bytes, "input: \(text)")
            // Not the 64 KiB scratch buffer (the value-tree path writes into a 1 KiB writer).
            #expect(body.bytes.capacity < max(2 * body.bytes.count, 2048), "a body must not keep the scratch buffer")
            #expect(reserved == expectedReserved, "input: \(text)")
        }
        // A malformed document fails the whole answer, as a malformed answer does.
        for bad in [#"{"results":[{"docs":[{"ok":{"a":}}]}]}"#, #"{"results":[{"docs":[{"ok":{"a":1}]}]}"#] {
            #expect(throws: StoreError.self, "\(bad)") {
                try JSONSkimmer.values(at: path, in: bad) { input, start throws(StoreError) -> (Int, end: Int)? in
                    (0, try CanonicalBody.parse(objectIn: input, at: start, scratch: &scratch).end)
                }
            }
        }
    }

    @Test func canonicalizerRejectsWhatTheParserRejects() {
        for text in ["{", "{\"a\":}", "{\"a\":1,}", "[1]", "{\"a\":1} x", "{\"a\":\"\u{1}\"}", "{\"a\":01}", "{a:1}", "{\"a\":tru}"] {
            #expect(throws: StoreError.self, "\(text)") { try JSONCanonicalizer.canonicalObject(text) }
            #expect(throws: StoreError.self, "\(text)") { try JSONParser.parseObject(text) }
        }
    }

    @Test func stringScanFindsEverySpecialByte() {
        for length in 0..<40 {
            for position in 0..<length {
                for special: UInt8 in [0x22, 0x5C, 0x00, 0x1F, 0x0A] {
                    var bytes = [UInt8](repeating: UInt8(ascii: "a"), count: length)
                    bytes[position] = special
                    // Bytes just outside the special set must not stop the scan.
                    if position > 0 { bytes[position - 1] = 0x20 }
                    if position > 1 { bytes[position - 2] = 0x21 }
                    if position > 2 { bytes[position - 3] = 0x5D }
                    let found = bytes.withUnsafeBufferPointer { StringScan.firstSpecial($0, from: 0, to: length) }
                    #expect(found == position, "length \(length) special \(special) at \(position)")
                }
            }
            let plain = [UInt8](repeating: 0xC3, count: length)
            #expect(plain.withUnsafeBufferPointer { StringScan.firstSpecial($0, from: 0, to: length) } == length)
        }
    }
}
