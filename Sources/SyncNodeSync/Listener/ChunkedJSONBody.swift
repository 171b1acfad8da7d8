import Hummingbird
import NIOCore
import SyncNodeStore

/// A large JSON answer (`_bulk_get`, `_all_docs`, `_changes`) cut into
/// pieces of about 64 KiB as it is written, rather than one buffer that
/// doubles as it grows.
///
/// A one-megabyte answer in one buffer meant allocations of 256 KiB, 512 KiB,
/// 1 MiB and 2 MiB while it grew, then copies of the whole for NIO and the
/// TLS layer. `serve` fixes glibc's mmap threshold at 256 KiB (for bounded
/// memory under hostile input), so each of those was a fresh mapping whose
/// pages faulted in and were unmapped again: page faults and unmaps were
/// about 15% of a serving node's CPU during a pull. Pieces below the
/// threshold come from the heap and are reused.
struct ChunkedJSONBody {
    private var pieces: [ByteBuffer] = []

    static let pieceSize = 64 * 1024

    /// A writer to write the answer with, sized for a piece.
    static func writer() -> JSONWriter { JSONWriter(capacity: pieceSize + pieceSize / 4) }

    /// Moves what `writer` holds into a piece once it is large enough.
    mutating func spill(_ writer: inout JSONWriter) {
        if writer.bytes.count >= Self.pieceSize { take(&writer) }
    }

    private mutating func take(_ writer: inout JSONWriter) {
        guard !writer.bytes.isEmpty else { return }
        pieces.append(ByteBuffer(bytes: writer.bytes))
        writer.bytes.removeAll(keepingCapacity: true)
    }

    /// The answer, `writer`'s rest included, with its length; written a piece at a time.
    consuming func response(finishing writer: inout JSONWriter, status: HTTPResponse.Status = .ok) -> Response {
        take(&writer)
        return Response(status: status, headers: [.contentType: HTTP.json], body: ResponseBody(contentsOf: pieces))
    }
}
