import Foundation
import Testing
@testable import SyncNodeStore
@testable import SyncNodeSync

@Suite struct WireDocumentTests {
    /// The byte search that decides whether a body needs the attachment path,
    /// against Swift's own substring search on random texts.
    @Test func containsAgreesWithANaiveSearch() {
        var random = SeededRandom(seed: 7)
        let alphabet = Array("\"@_abtypelob:")
        for _ in 0..<5000 {
            let text = String((0..<Int.random(in: 0..<40, using: &random)).map { _ in alphabet.randomElement(using: &random) ?? "a" })
            #expect(WireDocument.contains(text, "\"@type\":\"blob\"") == text.contains("\"@type\":\"blob\""), "\(text)")
            #expect(WireDocument.contains(text, "\"_at") == text.contains("\"_at"), "\(text)")
        }
        #expect(WireDocument.contains(#""_attachments""#, "\"_attachments\""))
        #expect(WireDocument.contains(#"{"a":1,"_attachments"}"#, "\"_attachments\""))
        #expect(!WireDocument.contains(#"_attachments""#, "\"_attachments\""))
        #expect(!WireDocument.contains("", "\"_a"))
    }
}
