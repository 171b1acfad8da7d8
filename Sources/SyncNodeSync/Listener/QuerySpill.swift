#if canImport(Glibc)
import Glibc
#else
import Darwin
#endif
import Foundation
import Hummingbird
import NIOCore
import SyncNodeStore
import Synchronization

/// A `_query` result written out as it is read, then sent from there.
///
/// A query's rows come from one SQLite statement, which cannot stay open while a slow client
/// reads: it would hold a reader connection and its snapshot for as long as the client takes.
/// So the rows are written, as JSON joined by commas, to a file in the database's own folder
/// (the owner's alone), unlinked at once so that nothing is left behind by a crash, and the
/// answer is sent from the file a piece at a time. Memory holds a row and a piece, whatever
/// the result's size.
final class QuerySpill: @unchecked Sendable {
    /// The most a result may hold, and all the results a listener is writing at once: beyond it
    /// a query is refused, with a way to narrow it (or to wait, when others hold the room).
    static let limit: Int64 = 4 << 30

    /// What the spills of one listener hold on disk at once: their files share the file system
    /// with the databases, which must not fill up because many big queries ran together.
    final class Usage: Sendable {
        fileprivate let bytes = Mutex<Int64>(0)
        /// The bytes the spills hold now.
        var held: Int64 { bytes.withLock { $0 } }
    }

    private let file: FileHandle
    private let usage: Usage
    /// The bytes written: the rows' JSON and the commas between them.
    private(set) var size: Int64 = 0

    /// Runs `query` on a thread of its own (a big result takes seconds, which the cooperative
    /// threads must not wait out) and writes its rows to a new spill file.
    /// The query stops once `departure` tells that the client left: nobody waits for its rows.
    /// - Throws: `StoreError` from the query, ``CouchError`` 413 past `limit`, 499 when the client
    ///   left, or the file's error.
    static func run(
        _ query: Query, in directory: URL, limit: Int64 = limit, usage: Usage, departure: ClientDeparture? = nil
    ) async throws -> QuerySpill {
        let spill = try QuerySpill(directory: directory, usage: usage)
        try await withCheckedThrowingContinuation { (done: CheckedContinuation<Void, Error>) in
            let thread = Thread {
                done.resume(with: Swift.Result { try spill.spill(query, limit: limit, departure: departure) })
            }
            // SQLite's recursion (deep expressions, nested JSON) wants a main thread's stack.
            thread.stackSize = 8 << 20
            thread.start()
        }
        return spill
    }

    private init(directory: URL, usage: Usage) throws {
        self.usage = usage
        let path = directory.appendingPathComponent(".query-\(UUID().uuidString)").path
        let descriptor = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else {
            let reason = String(cString: strerror(errno))
            throw CouchError(status: 500, error: "unknown_error", reason: "cannot make a file for the query's result in \(directory.path): \(reason)")
        }
        unlink(path)
        file = FileHandle(fileDescriptor: descriptor, closeOnDealloc: true)
    }

    deinit {
        let size = size
        usage.bytes.withLock { $0 -= size }
    }

    private func spill(_ query: Query, limit: Int64, departure: ClientDeparture?) throws {
        do {
            try writeRows(query, limit: limit, departure: departure)
        } catch {
            // What a failed spill wrote is given back now, not when its thread lets go of it.
            usage.bytes.withLock { $0 -= size }
            size = 0
            throw error
        }
    }

    private func writeRows(_ query: Query, limit: Int64, departure: ClientDeparture?) throws {
        var piece: [UInt8] = []
        piece.reserveCapacity(AnswerStream.pieceSize * 2)
        try query.writeRowsJSON { bytes in
            if departure?.hasDeparted == true {
                throw CouchError(status: 499, error: "client_closed", reason: "the client left before the query's result was read")
            }
            size += Int64(bytes.count)
            let held = usage.bytes.withLock { $0 += Int64(bytes.count); return $0 }
            if size > limit {
                throw CouchError(status: 413, error: "too_large", reason: "the query's result holds more than \(limit >> 20) MB: select fewer properties, or read it in pages with LIMIT and OFFSET")
            }
            if held > limit {
                throw CouchError(status: 503, error: "service_unavailable", reason: "other query results being written hold the \(limit >> 20) MB of disk allowed them: retry later, or read the result in pages with LIMIT and OFFSET")
            }
            // A big value (a whole document) goes straight from SQLite's copy, after what gathered.
            let big = bytes.count >= AnswerStream.pieceSize
            if !big { piece.append(contentsOf: bytes) }
            if big || piece.count >= AnswerStream.pieceSize {
                try piece.withUnsafeBytes(writeAll)
                piece.removeAll(keepingCapacity: true)
            }
            if big { try writeAll(bytes) }
        }
        try piece.withUnsafeBytes(writeAll)
        try file.seek(toOffset: 0)
    }

    private func writeAll(_ bytes: UnsafeRawBufferPointer) throws {
        guard let base = bytes.baseAddress else { return }
        var offset = 0
        while offset < bytes.count {
            let written = write(file.fileDescriptor, base + offset, bytes.count - offset)
            if written < 0 && errno == EINTR { continue }
            guard written > 0 else {
                throw CouchError(status: 500, error: "unknown_error", reason: "cannot write the query's result to disk: \(String(cString: strerror(errno)))")
            }
            offset += written
        }
    }

    /// Sends the rows, a piece at a time.
    func send(to writer: inout any ResponseBodyWriter) async throws {
        while let data = try file.read(upToCount: AnswerStream.pieceSize), !data.isEmpty {
            try await writer.write(ByteBuffer(bytes: data))
        }
    }
}
