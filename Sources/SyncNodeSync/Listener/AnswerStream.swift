import Hummingbird
import NIOCore
import SyncNodeStore

/// A JSON answer written to its client as it is produced (`_all_docs`,
/// `_changes`, `_bulk_get`, `_find`, `_query`, `open_revs`).
///
/// Text gathers in a writer and leaves in pieces of about 64 KiB, each written
/// before more is read: an answer holds a piece at a time, never the whole,
/// and a client that reads slowly slows its answer down instead of making the
/// node buffer it. A large document body is measured before it is read, read
/// only once the listener's ``AnswerBudget`` has room for it, and written in
/// slices straight from the string read.
///
/// The pieces stay below glibc's mmap threshold, which `serve` fixes at
/// 256 KiB: larger buffers are fresh mappings whose pages fault in and are
/// unmapped again, which once cost a serving node about 15% of its CPU during
/// a pull. Pieces below it come from the heap and are reused.
struct AnswerStream {
    static let pieceSize = 64 * 1024
    /// Bodies up to this size are read with their rows; larger ones wait for the budget.
    static let largeBody = 256 * 1024
    /// How much of a run of rows' bodies is read in one snapshot before it is written.
    static let runBytes = 1 << 20
    private static let sliceSize = 128 * 1024

    var json = JSONWriter(capacity: pieceSize + pieceSize / 4)
    let budget: AnswerBudget

    /// An answer whose JSON `produce` writes through a stream (then flushed and finished).
    static func response(
        budget: AnswerBudget, headers: HTTPFields = [:],
        _ produce: @escaping @Sendable (inout AnswerStream, inout any ResponseBodyWriter) async throws -> Void
    ) -> Response {
        let body = ResponseBody { writer in
            var stream = AnswerStream(budget: budget)
            try await produce(&stream, &writer)
            try await stream.flush(&writer, all: true)
            try await writer.finish(nil)
        }
        var fields = headers
        fields[.contentType] = HTTP.json
        return Response(status: .ok, headers: fields, body: body)
    }

    /// The next run of `count` items from `start`, read by `read` (what it read and its bytes)
    /// in one snapshot of `collection` (one read transaction, not one each), ending once about
    /// ``runBytes`` of bodies have been read.
    static func run<Read>(
        count: Int, from start: Int, in collection: DocumentCollection, read: (Int) throws -> (Read, bytes: Int)
    ) throws -> [Read] {
        try collection.inSnapshot {
            var run: [Read] = []
            var bytes = 0
            var index = start
            while index < count, bytes < runBytes, run.count < 1000 {
                let (item, size) = try read(index)
                run.append(item)
                bytes += size
                index += 1
            }
            return run
        }
    }

    /// A run item's body for ``run(count:from:in:read:)``: revision `rev` of `id`, read when at most
    /// `maxSize` bytes (``largeBody``), else only measured; and the bytes read.
    static func body(of id: String, rev: String, in collection: DocumentCollection, readingAtMost maxSize: Int = largeBody) throws -> (RevisionBody?, bytes: Int) {
        let body = try collection.body(id: id, rev: rev, readingAtMost: maxSize)
        if case .text(let text)? = body { return (body, text.utf8.count) }
        return (body, 0)
    }

    /// Writes what has gathered once it makes a piece (`all`: whatever there is).
    mutating func flush(_ writer: inout any ResponseBodyWriter, all: Bool = false) async throws {
        guard json.bytes.count >= (all ? 1 : Self.pieceSize) else { return }
        try await Self.write(&json, to: &writer)
    }

    private static func write(_ json: inout JSONWriter, to writer: inout any ResponseBodyWriter) async throws {
        guard !json.bytes.isEmpty else { return }
        try await writer.write(ByteBuffer(bytes: json.bytes))
        json.bytes.removeAll(keepingCapacity: true)
    }

    /// Appends a document's wire JSON: with `simple`, a body holding no blobs is
    /// spliced after `_id`, `_rev`, `_deleted` and `revisions` as `_revisions`;
    /// otherwise `encode` makes the JSON from the body. A ``RevisionBody/large(_:)``
    /// body is read here, once the budget has room for it, and so is a body whose
    /// encoding costs more than ``largeBody`` (see ``encodingCost(of:inliningAttachments:)``):
    /// `inliningAttachments` says that `encode` puts the attachments' content in it.
    mutating func writeDocument(
        id: String, rev: String, deleted: Bool, body: RevisionBody, revisions: [String]? = nil, simple: Bool = true,
        inliningAttachments: Bool = false,
        collection: DocumentCollection, to writer: inout any ResponseBodyWriter, encode: (String) throws -> String
    ) async throws {
        let budget = budget
        // What this document holds of the budget: its body's size when large, more to encode it.
        var held = 0
        defer { budget.release(held) }
        let text: String
        switch body {
        case .text(let small):
            text = small
        case .large(let size):
            held = try await budget.reserve(size + Self.sliceSize * 2, departure: await Self.departure())
            text = try Self.read(id: id, rev: rev, in: collection)
        }
        let size = text.utf8.count
        if simple, size <= Self.largeBody, WireDocument.appendSimple(id: id, rev: rev, deleted: deleted, body: text, revisions: revisions, to: &json) {
            // Spliced with its row.
        } else if simple, size > Self.largeBody, !WireDocument.hasBlobs(text) {
            // Its `_` members, then the body in slices, never copied whole.
            try await Self.write(&json, to: &writer)
            WireDocument.appendSimpleHead(id: id, rev: rev, deleted: deleted, revisions: revisions, to: &json)
            json.writeRaw(",")
            try await Self.write(&json, to: &writer)
            try await Self.writeSlices(of: text, from: 1, to: &writer)
        } else {
            let cost = try Self.encodingCost(of: text, inliningAttachments: inliningAttachments)
            if cost <= max(held, Self.largeBody) {
                json.writeRaw(try encode(text))
            } else {
                // What is held is given back and the whole taken at once: holding part while
                // waiting for the rest could wait on itself.
                budget.release(held)
                held = 0
                held = try await budget.reserve(cost, departure: await Self.departure())
                try await Self.write(&json, to: &writer)
                try await Self.writeSlices(of: try encode(text), from: 0, to: &writer)
            }
        }
        try await flush(&writer)
    }

    /// What encoding `text` may hold at its peak: the body parsed and written again beside it,
    /// and, `inliningAttachments`, their content as data, base64 text and JSON.
    static func encodingCost(of text: String, inliningAttachments: Bool) throws -> Int {
        3 * text.utf8.count + 5 * (inliningAttachments ? try WireDocument.inlineBytes(of: text) : 0)
    }

    /// The client of the answer being written, when the listener set it (see ``ClientDeparture``).
    private static func departure() async -> ClientDeparture? {
        guard let channel = ClientDeparture.connection else { return nil }
        return await ClientDeparture.of(channel)
    }

    private static func read(id: String, rev: String, in collection: DocumentCollection) throws -> String {
        guard case .text(let text)? = try collection.body(id: id, rev: rev) else {
            throw CouchError(status: 500, error: "unknown_error", reason: "The body of '\(id)' \(rev) was removed while it was being sent.")
        }
        return text
    }

    /// Calls `use` with the whole of `body`: a large one is read only once the budget has
    /// room for it (and for its way out), and the room is kept until `use` returns.
    static func withWholeBody<T>(
        id: String, rev: String, _ body: RevisionBody, budget: AnswerBudget, collection: DocumentCollection,
        _ use: (String) async throws -> T
    ) async throws -> T {
        let size: Int
        switch body {
        case .text(let text): return try await use(text)
        case .large(let bytes): size = bytes
        }
        let reserved = try await budget.reserve(size + sliceSize * 2, departure: await departure())
        defer { budget.release(reserved) }
        return try await use(try read(id: id, rev: rev, in: collection))
    }

    /// Writes `text`'s UTF-8 bytes from `start` on, a slice at a time: no copy of the whole.
    static func writeSlices(of text: String, from start: Int, to writer: inout any ResponseBodyWriter) async throws {
        var text = text
        let count = text.utf8.count
        var offset = start
        while offset < count {
            let end = min(offset + Self.sliceSize, count)
            let slice = text.withUTF8 { ByteBuffer(bytes: UnsafeBufferPointer(rebasing: $0[offset..<end])) }
            try await writer.write(slice)
            offset = end
        }
    }
}
