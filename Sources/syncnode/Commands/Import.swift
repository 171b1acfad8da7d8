import ArgumentParser
import Foundation
import SyncNodeStore

struct Import: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Bulk-import JSON lines (one object per line; _id is the document ID, _rev is ignored); prints {\"imported\",\"seconds\"}.")

    @OptionGroup var node: NodeOptions
    @Argument(help: "NAME or NAME.SCOPE.COLLECTION") var keyspace: String
    @Argument(help: "A JSON-lines file, or - for stdin.") var file: String
    @Option(help: "Documents per transaction.") var batchSize: Int = 1000

    func run() throws {
        let keyspace = try Keyspace(keyspace)
        guard batchSize > 0 else { throw CLIError.usage("--batch-size must be positive") }
        let handle: FileHandle
        if file == "-" {
            handle = .standardInput
        } else {
            guard let h = FileHandle(forReadingAtPath: file) else { throw CLIError.user("cannot read \(file)") }
            handle = h
        }
        let (db, collection) = try node.collection(keyspace, create: true)
        defer { try? db.close() }

        let start = Date()
        var lastReport = start
        var reader = LineReader(handle: handle)
        var imported = 0
        var batch: [MutableDocument] = []
        batch.reserveCapacity(batchSize)
        func flush() throws {
            try db.inBatch { for doc in batch { try collection.save(doc) } }
            imported += batch.count
            batch.removeAll(keepingCapacity: true)
            if Date().timeIntervalSince(lastReport) >= 1 {
                lastReport = Date()
                let rate = Double(imported) / lastReport.timeIntervalSince(start)
                Output.progress("import: \(imported) documents (\(Int(rate))/s)")
            }
        }
        while let line = try reader.next() {
            if line.allSatisfy(\.isWhitespace) { continue }
            do {
                batch.append(try Self.document(from: line))
                if batch.count == batchSize { try flush() }
            } catch {
                // The failing batch rolled back; earlier batches are committed.
                throw CLIError.user("line \(reader.lineNumber): \(error); \(imported) documents imported before its batch")
            }
        }
        do {
            try flush()
        } catch {
            throw CLIError.user("\(error); \(imported) documents imported before the last batch")
        }
        let seconds = Date().timeIntervalSince(start)
        Output.line(["imported": .int(Int64(imported)), "seconds": .double((seconds * 1000).rounded() / 1000)])
    }

    /// A document from one JSON line: `_id` names it, `_rev` is dropped.
    static func document(from line: String) throws -> MutableDocument {
        guard case .dictionary(var values) = try DocumentValue(json: line) else {
            throw StoreError.invalidJSON("a line must hold a JSON object")
        }
        var id: String? = nil
        if let idValue = values.removeValue(forKey: "_id") {
            guard case .string(let s) = idValue else { throw StoreError.invalidValue("_id must be a string") }
            id = s
        }
        values["_rev"] = nil
        let doc = MutableDocument(id: id)
        for (key, value) in values { doc.setDocumentValue(value, forKey: key) }
        return doc
    }
}
