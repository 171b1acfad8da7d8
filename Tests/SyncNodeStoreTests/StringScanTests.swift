import Foundation
import Testing
@testable import SyncNodeStore

@Suite struct StringScanTests {
    /// The byte search that decides whether a body holds blobs or attachments,
    /// against Swift's own substring search on random texts.
    @Test func containsAgreesWithANaiveSearch() {
        var random = SeededRandom(seed: 7)
        let alphabet = Array("\"@_abtypelob:")
        for _ in 0..<5000 {
            var text = String((0..<Int.random(in: 0..<40, using: &random)).map { _ in alphabet.randomElement(using: &random) ?? "a" })
            // Half the texts get the needle, or a near miss, at a random place: random letters alone never spell it.
            if Bool.random(using: &random) {
                var needle = Array(#""@type":"blob""#)
                if Bool.random(using: &random) { needle[Int.random(in: 0..<needle.count, using: &random)] = "x" }
                text.insert(contentsOf: needle, at: text.index(text.startIndex, offsetBy: Int.random(in: 0...text.count, using: &random)))
            }
            #expect(StringScan.contains(text, "\"@type\":\"blob\"") == text.contains("\"@type\":\"blob\""), "\(text)")
            #expect(StringScan.contains(text, "\"_at") == text.contains("\"_at"), "\(text)")
        }
        #expect(StringScan.contains(#""_attachments""#, "\"_attachments\""))
        #expect(StringScan.contains(#"{"a":1,"_attachments"}"#, "\"_attachments\""))
        #expect(!StringScan.contains(#"_attachments""#, "\"_attachments\""))
        #expect(!StringScan.contains("", "\"_a"))
    }
}
