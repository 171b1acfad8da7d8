import Foundation
import SyncNodeStore

/// Documents of about 1 KB: 15 top-level fields, a nested object and an array.
enum DocumentGenerator {
    static let words = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet",
                        "kilo", "lima", "mike", "november", "oscar", "papa", "quebec", "romeo", "sierra", "tango"]
    static let cities = ["Oslo", "Lyon", "Porto", "Graz", "Turku", "Gent", "Brno", "Split"]

    static func id(_ i: Int) -> String { String(format: "doc-%07d", i) }

    static func sentence(_ rng: inout SeededRandom, words count: Int) -> String {
        (0..<count).map { _ in words[Int(rng.next() % UInt64(words.count))] }.joined(separator: " ")
    }

    static func document(_ i: Int, rng: inout SeededRandom) -> [String: DocumentValue] {
        let tagCount = 3 + Int(rng.next() % 4)
        return [
            "type": "product",
            "name": .string(sentence(&rng, words: 3)),
            "sku": .string("SKU-\(rng.next() % 1_000_000)"),
            "price": .double(Double(rng.next() % 100_000) / 100 + 0.01),
            "quantity": .int(Int64(rng.next() % 1000)),
            "active": .bool(rng.next() % 2 == 0),
            "rating": .double(Double(rng.next() % 50) / 10 + 0.05),
            "category": .string(words[Int(rng.next() % 8)]),
            "created": .string("2026-\(String(format: "%02d", 1 + rng.next() % 12))-\(String(format: "%02d", 1 + rng.next() % 28))T10:00:00.000Z"),
            "description": .string(sentence(&rng, words: 80)),
            "tags": .array((0..<tagCount).map { _ in .string(words[Int(rng.next() % UInt64(words.count))]) }),
            "dimensions": ["width": .int(Int64(rng.next() % 200)), "height": .int(Int64(rng.next() % 200)), "depth": .int(Int64(rng.next() % 200)), "unit": "cm"],
            "supplier": ["name": .string(sentence(&rng, words: 2)), "city": .string(cities[Int(rng.next() % 8)]), "contact": .string("sales\(rng.next() % 100)@example.com")],
            "index": .int(Int64(i)),
            "notes": .string(sentence(&rng, words: 12)),
        ]
    }

    static func documents(count: Int, seed: UInt64 = 42) -> [(id: String, body: [String: DocumentValue])] {
        var rng = SeededRandom(seed: seed)
        return (0..<count).map { (id($0), document($0, rng: &rng)) }
    }
}
