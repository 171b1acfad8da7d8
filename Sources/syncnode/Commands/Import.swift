import ArgumentParser
import Dispatch
import Foundation
import Synchronization
import SyncNodeStore
import SyncNodeSync

struct Import: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Bulk-import JSON lines (one object per line; _id is the document ID, _rev is ignored); prints {\"imported\",\"seconds\"}.",
        discussion: "Example:\n  syncnode import app.work.tasks tasks.jsonl")

    @ParentCommand var syncnode: SyncNodeCommand
    var node: NodeOptions { syncnode.node }
    @Argument(help: "NAME or NAME.SCOPE.COLLECTION") var keyspace: Keyspace
    @Argument(help: "A JSON-lines file, or - for stdin.") var file: String
    @Option(help: "Documents per transaction.") var batchSize: Int = 1000

    func run() throws {
        guard batchSize > 0 else { throw CLIError.usage("--batch-size must be positive") }
        let handle: FileHandle
        if file == "-" {
            handle = .standardInput
        } else {
            do {
                handle = try FileHandle(forReadingFrom: URL(fileURLWithPath: file))
            } catch {
                throw CLIError.reading(file, error)
            }
        }
        try node.withCollection(keyspace, create: true) { db, collection in
            // The final checkpoint is part of the import's time.
            let start = Date()
            let imported = try db.withBulkWrites {
                // A pipeline: this thread reads a batch and canonicalizes it on every
                // core while the writer commits the previous batch.
                // A file's size gives a bar; stdin only counts.
                let size = file == "-" ? nil : (try? FileManager.default.attributesOfItem(atPath: file))?[.size] as? Int
                let progress = ProgressLine(label: "import")
                defer { progress.finish() }
                var reader = LineReader(handle: handle)
                let writer = BatchWriter(collection: collection)
                func nextLine() throws -> String? {
                    do {
                        return try reader.next()
                    } catch {
                        // The batches already handed over are committed, as after a bad line.
                        throw CLIError.reading(file == "-" ? "stdin" : file, error, imported: try writer.finish())
                    }
                }
                while true {
                    var lines: [(number: Int, text: String)] = []
                    lines.reserveCapacity(batchSize)
                    while lines.count < batchSize, let line = try nextLine() {
                        if !line.allSatisfy(\.isWhitespace) { lines.append((reader.lineNumber, line)) }
                    }
                    if lines.isEmpty { break }
                    let prepared: [(id: String, body: CanonicalBody)]
                    do {
                        prepared = try Self.prepare(lines)
                    } catch let error as CLIError {
                        let imported = try writer.finish()
                        throw CLIError.user("\(error.message); \(imported) documents imported before its batch")
                    }
                    try writer.submit(prepared)
                    let done = writer.imported
                    progress.show(fraction: size.map { Double(reader.bytesRead) / Double(max($0, 1)) },
                                  counts: "\(done) documents (\(Int(Double(done) / max(Date().timeIntervalSince(start), 0.001)))/s)")
                }
                return try writer.finish()
            }
            let seconds = Date().timeIntervalSince(start)
            Output.line(["imported": .int(Int64(imported)), "seconds": .double((seconds * 1000).rounded() / 1000)])
        }
    }

    /// Canonicalizes a batch in parallel; the first bad line (by number) is the error.
    static func prepare(_ lines: [(number: Int, text: String)]) throws -> [(id: String, body: CanonicalBody)] {
        let results = ResultSlots<(id: String, body: CanonicalBody)>(count: lines.count)
        let chunks = min(lines.count, ProcessInfo.processInfo.activeProcessorCount * 4)
        DispatchQueue.concurrentPerform(iterations: chunks) { chunk in
            for i in stride(from: chunk, to: lines.count, by: chunks) {
                results.set(i, Swift.Result { try document(from: lines[i].text) })
            }
        }
        return try results.values.enumerated().map { i, result in
            do {
                return try result.get()
            } catch {
                throw CLIError.user("line \(lines[i].number): \(error)")
            }
        }
    }

    /// A document from one JSON line: `_id` names it (else a UUID), `_rev` is
    /// dropped, any other top-level `_` name is an error.
    static func document(from line: String) throws -> (id: String, body: CanonicalBody) {
        let (body, reserved) = try CanonicalBody.parse(objectJSON: line)
        // Made only when needed: Foundation's UUID() opens /dev/urandom each time (a fifth of the
        // import's system time when every line paid for one).
        var id: String?
        for (key, value) in reserved {
            switch (key, value) {
            case ("_id", .string(let s)): id = s
            case ("_id", _): throw StoreError.invalidValue("_id must be a string")
            case ("_rev", _): continue
            default: throw StoreError.reservedProperty(key)
            }
        }
        return (id ?? UUID().uuidString, body)
    }
}

/// Slots that parallel workers fill, each index by one worker.
private final class ResultSlots<T>: @unchecked Sendable {
    private var slots: [Swift.Result<T, Error>?]
    private let lock = NSLock()

    init(count: Int) { slots = Array(repeating: nil, count: count) }

    func set(_ index: Int, _ value: Swift.Result<T, Error>) { lock.withLock { slots[index] = value } }

    var values: [Swift.Result<T, Error>] {
        lock.withLock { slots.map { $0 ?? .failure(CLIError.user("line was not processed")) } }
    }
}

/// Commits batches on its own thread, one at a time, so the next batch can be
/// prepared meanwhile. A failed batch rolls back whole; earlier ones stay.
private final class BatchWriter: Sendable {
    private let collection: DocumentCollection
    private let queue = DispatchQueue(label: "syncnode.import.writer")
    private let state = Mutex<(imported: Int, error: CLIError?)>((0, nil))

    init(collection: DocumentCollection) { self.collection = collection }

    var imported: Int { state.withLock { $0.imported } }

    func submit(_ batch: [(id: String, body: CanonicalBody)]) throws {
        queue.sync {}  // at most one batch in flight
        try throwIfFailed()
        queue.async { [self] in
            do {
                _ = try collection.saveBodies(batch)
                state.withLock { $0.imported += batch.count }
            } catch {
                state.withLock { s in
                    s.error = CLIError.user("\(error); \(s.imported) documents imported before the failing batch")
                }
            }
        }
    }

    /// Waits for the last batch; returns the number imported.
    func finish() throws -> Int {
        queue.sync {}
        try throwIfFailed()
        return imported
    }

    private func throwIfFailed() throws {
        if let error = state.withLock({ $0.error }) { throw error }
    }
}
