import Foundation
import SyncNodeStore

/// `SyncNodeBenchmarks codable [N]`: `save(from:)` and `document(id:as:)` of
/// N Codable models against the same documents saved as MutableDocuments
/// and read back into the same struct by hand, in the same run.
enum CodableBenchmark {
    struct Dimensions: Codable, Equatable { var width: Int, height: Int, depth: Int, unit: String }
    struct Supplier: Codable, Equatable { var name: String, city: String, contact: String }

    /// The generator's document as a model.
    struct Product: Codable, Equatable {
        @DocumentID var id: String? = nil
        var type: String
        var name: String
        var sku: String
        var price: Double
        var quantity: Int
        var active: Bool
        var rating: Double
        var category: String
        var created: Date
        var description: String
        var tags: [String]
        var dimensions: Dimensions
        var supplier: Supplier
        var index: Int
        var notes: String
    }

    /// What an app writes without Codable: typed accessors, field by field.
    static func product(from d: Document) -> Product {
        let dims = d.dictionary(forKey: "dimensions")
        let supplier = d.dictionary(forKey: "supplier")
        return Product(
            id: d.id, type: d.string(forKey: "type") ?? "", name: d.string(forKey: "name") ?? "", sku: d.string(forKey: "sku") ?? "",
            price: d.double(forKey: "price"), quantity: d.int(forKey: "quantity"), active: d.boolean(forKey: "active"),
            rating: d.double(forKey: "rating"), category: d.string(forKey: "category") ?? "", created: d.date(forKey: "created") ?? .distantPast,
            description: d.string(forKey: "description") ?? "",
            tags: d.array(forKey: "tags").map { a in (0..<a.count).compactMap { a.string(at: $0) } } ?? [],
            dimensions: Dimensions(width: dims?.int(forKey: "width") ?? 0, height: dims?.int(forKey: "height") ?? 0,
                                   depth: dims?.int(forKey: "depth") ?? 0, unit: dims?.string(forKey: "unit") ?? ""),
            supplier: Supplier(name: supplier?.string(forKey: "name") ?? "", city: supplier?.string(forKey: "city") ?? "",
                               contact: supplier?.string(forKey: "contact") ?? ""),
            index: d.int(forKey: "index"), notes: d.string(forKey: "notes") ?? "")
    }

    static func run(count: Int) throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("syncnode-bench-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        print("codable benchmark: \(count) models of about 1 KB, batches of 1000, release build expected; best of 3 runs each")

        let docs = DocumentGenerator.documents(count: count)
        // A generated document that does not decode says where (StoreError.decodingFailed names the key path).
        let models = try docs.map { id, body in
            try Document(id: id, revisionID: nil, isDeleted: false, values: body).data(as: Product.self)
        }
        var rng = SeededRandom(seed: 7)
        let order = docs.indices.shuffled(using: &rng)

        var best = (save: Double.infinity, baseSave: Double.infinity, read: Double.infinity, baseRead: Double.infinity)
        for round in 0..<3 {
            let base = try Database(name: "base\(round)", config: DatabaseConfiguration(directory: dir))
            let ours = try Database(name: "ours\(round)", config: DatabaseConfiguration(directory: dir))
            defer { try? base.close(); try? ours.close() }
            let baseCollection = try base.defaultCollection()
            let ourCollection = try ours.defaultCollection()

            best.baseSave = min(best.baseSave, try Report.time {
                try StoreBenchmark.insertAll(docs, into: baseCollection, batchSize: 1000)
            })
            best.save = min(best.save, try Report.time {
                for start in stride(from: 0, to: count, by: 1000) {
                    try ours.inBatch {
                        for i in start..<min(start + 1000, count) { try ourCollection.save(from: models[i]) }
                    }
                }
            })

            var baseRead: [Product] = []
            var ourRead: [Product] = []
            baseRead.reserveCapacity(count)
            ourRead.reserveCapacity(count)
            best.baseRead = min(best.baseRead, try Report.time {
                for i in order { if let d = try baseCollection.document(id: docs[i].id) { baseRead.append(product(from: d)) } }
            })
            best.read = min(best.read, try Report.time {
                for i in order { if let m = try ourCollection.document(id: docs[i].id, as: Product.self) { ourRead.append(m) } }
            })
            guard baseRead.count == count, baseRead == ourRead, ourRead == order.map({ models[$0] }) else {
                throw StoreError.invalidValue("the two paths read different models")
            }
        }
        Report.compare("save(from:)", count: count, ours: best.save, baseline: best.baseSave, target: 1.5, labels: ("codable", "MutableDocument"))
        Report.compare("document(id:as:)", count: count, ours: best.read, baseline: best.baseRead, target: 1.5, labels: ("codable", "by hand"))
    }
}
