#if canImport(Glibc)
import Glibc
#else
import Darwin
#endif
import Foundation
import Hummingbird
import NIOCore
import SyncNodeStore

/// A `_query` result written out as it is read, then sent from there.
///
/// A query's rows come from one SQLite statement, which cannot stay open while a slow client
/// reads: it would hold a reader connection and its snapshot for as long as the client takes.
/// So the rows are written, as JSON joined by commas, to a file in the database's own folder
/// (the owner's alone), unlinked at once so that nothing is left behind by a crash, and the
/// answer is sent from the file a piece at a time. Memory holds a row and a piece, whatever
/// the result's size.
final class QuerySpill: @unchecked Sendable {
    /// The most a result may hold: beyond it the query is refused, with a way to narrow it.
    static let limit: Int64 = 4 << 30

    private let file: FileHandle
    /// The bytes written: the rows' JSON and the commas between them.
    private(set) var size: Int64 = 0

    /// Runs `query` on a thread of its own (a big result takes seconds, which the cooperative
    /// threads must not wait out) and writes its rows to a new spill file.
    /// The query stops once `departure` tells that the client left: nobody waits for its rows.
    /// - Throws: `StoreError` from the query, ``CouchError`` 413 past `limit`, 499 when the client
    ///   left, or the file's error.
    static func run(_ query: Query, in directory: URL, limit: Int64 = limit, departure: ClientDeparture? = nil) async throws -> QuerySpill {
        let spill = try QuerySpill(directory: directory)
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

    private init(directory: URL) throws {
        let path = directory.appendingPathComponent(".query-\(UUID().uuidString)").path
        let descriptor = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else {
            let reason = String(cString: strerror(errno))
            throw CouchError(status: 500, error: "unknown_error", reason: "cannot make a file for the query's result in \(directory.path): \(reason)")
        }
        unlink(path)
        file = FileHandle(fileDescriptor: descriptor, closeOnDealloc: true)
    }

    private func spill(_ query: Query, limit: Int64, departure: ClientDeparture?) throws {
        var piece: [UInt8] = []
        piece.reserveCapacity(AnswerStream.pieceSize * 2)
        try query.writeRowsJSON { bytes in
            if departure?.hasDeparted == true {
                throw CouchError(status: 499, error: "client_closed", reason: "the client left before the query's result was read")
            }
            size += Int64(bytes.count)
            if size > limit {
                throw CouchError(status: 413, error: "too_large", reason: "the query's result holds more than \(limit >> 20) MB: select fewer properties, or read it in pages with LIMIT and OFFSET")
            }
            if bytes.count < AnswerStream.pieceSize {
                piece.append(contentsOf: bytes)
                guard piece.count >= AnswerStream.pieceSize else { return }
            } else {
                // A big value (a whole document) goes straight from SQLite's copy: no second one.
                try piece.withUnsafeBytes(writeAll)
                piece.removeAll(keepingCapacity: true)
                try writeAll(bytes)
            }
            try piece.withUnsafeBytes(writeAll)
            piece.removeAll(keepingCapacity: true)
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
