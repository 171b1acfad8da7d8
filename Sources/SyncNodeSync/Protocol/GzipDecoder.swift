import NIOCore
#if canImport(CIsal)
import CIsal
#else
import CompressNIO
#endif

/// Decodes a gzip stream a piece at a time, handing each decoded piece on; at most `limit`
/// decoded bytes (413 beyond), and a stream cut short is an error, not a shorter content.
///
/// On Linux ISA-L's igzip does the work (about twice zlib's speed, and it checks the trailer's
/// CRC); elsewhere zlib.
final class GzipDecoder {
    #if canImport(CIsal)
    /// About 85 KiB: zeroed in place, never built on the stack and copied.
    private let state: UnsafeMutablePointer<inflate_state>
    #else
    private let decompressor: ZlibDecompressor
    #endif
    private var window: ByteBuffer
    private let limit: Int
    /// The last four bytes seen: at the end, gzip's trailer with the decoded size (mod 2^32).
    private var tail: [UInt8] = []
    private var inputBytes = 0
    private(set) var decodedBytes = 0

    init(limit: Int) throws {
        #if canImport(CIsal)
        state = .allocate(capacity: 1)
        UnsafeMutableRawPointer(state).initializeMemory(as: UInt8.self, repeating: 0, count: MemoryLayout<inflate_state>.size)
        isal_inflate_init(state)
        state.pointee.crc_flag = UInt32(ISAL_GZIP)
        #else
        decompressor = try ZlibDecompressor(algorithm: .gzip)
        #endif
        window = ByteBufferAllocator().buffer(capacity: 64 << 10)
        self.limit = limit
    }

    #if canImport(CIsal)
    deinit { state.deallocate() }
    #endif

    /// Decodes `input`, calling `sink` with each decoded piece.
    /// - Throws: 413 past the limit; 400 for data that is not gzip, or that goes on after the
    ///   stream's end; what `sink` throws.
    func feed(_ input: ByteBuffer, sink: (ByteBuffer) throws -> Void) throws {
        var input = input
        inputBytes += input.readableBytes
        tail = Array(tail.suffix(max(0, 4 - input.readableBytes))) + input.readableBytesView.suffix(4)
        // A round that moves nothing, with input left, is an error: bytes after the stream's end.
        while input.readableBytes > 0 {
            let (read, written) = (input.readableBytes, window.readableBytes)
            try inflate(&input)
            let moved = input.readableBytes != read || window.readableBytes != written
            if window.writableBytes == 0 || input.readableBytes == 0 { try flush(sink) }
            if !moved, input.readableBytes > 0 {
                throw CouchError.badRequest("the gzip-encoded body goes on after the end of its stream")
            }
        }
        try flush(sink)
    }

    #if canImport(CIsal)
    /// Decodes what `input` holds into the window, until either is used up.
    private func inflate(_ input: inout ByteBuffer) throws {
        var (used, status): (Int, Int32) = (0, 0)
        _ = input.withUnsafeReadableBytes { source in
            window.writeWithUnsafeMutableBytes(minimumWritableBytes: 0) { room in
                state.pointee.next_in = UnsafeMutablePointer(mutating: source.baseAddress?.assumingMemoryBound(to: UInt8.self))
                state.pointee.avail_in = UInt32(source.count)
                state.pointee.next_out = room.baseAddress?.assumingMemoryBound(to: UInt8.self)
                state.pointee.avail_out = UInt32(room.count)
                status = isal_inflate(state)
                used = source.count - Int(state.pointee.avail_in)
                return room.count - Int(state.pointee.avail_out)
            }
        }
        input.moveReaderIndex(forwardBy: used)
        (state.pointee.next_in, state.pointee.next_out) = (nil, nil)
        guard status >= 0 else {
            let why = switch status {
            case ISAL_INCORRECT_CHECKSUM: "its CRC does not match"
            case ISAL_INVALID_WRAPPER, ISAL_UNSUPPORTED_METHOD: "it is not gzip data"
            default: "its deflate data is corrupt (igzip \(status))"
            }
            throw CouchError.badRequest("the gzip-encoded body cannot be decoded (\(why))")
        }
    }
    #else
    /// Decodes what `input` holds into the window, until either is used up.
    private func inflate(_ input: inout ByteBuffer) throws {
        do {
            try decompressor.inflate(from: &input, to: &window)
        } catch let error as CompressNIOError where error == .bufferOverflow || error == .inputBufferOverflow {
            // The window is full, or the input is used up: the caller goes on.
        } catch {
            throw CouchError.badRequest("the gzip-encoded body cannot be decoded (\(error))")
        }
    }
    #endif

    private func flush(_ sink: (ByteBuffer) throws -> Void) throws {
        guard window.readableBytes > 0 else { return }
        decodedBytes += window.readableBytes
        guard decodedBytes <= limit else { throw CouchError.tooLarge("The gzip-encoded body decodes to more than \(limit) bytes") }
        try sink(window)
        window.clear()
    }

    /// Checks that the stream was whole.
    /// - Throws: 400 when it was cut short.
    func finish() throws {
        let size = tail.reversed().reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
        guard inputBytes >= 18, size == UInt32(truncatingIfNeeded: decodedBytes) else {
            throw CouchError.badRequest("the gzip-encoded body is truncated")
        }
        #if canImport(CIsal)
        // The trailer's CRC was checked as it went by: a stream that reached it is finished.
        guard state.pointee.block_state == ISAL_BLOCK_FINISH else {
            throw CouchError.badRequest("the gzip-encoded body is truncated")
        }
        #endif
    }

    /// The whole of `input`, decoded.
    static func decode(_ input: ByteBuffer, limit: Int) throws -> ByteBuffer {
        let decoder = try GzipDecoder(limit: limit)
        var out = ByteBufferAllocator().buffer(capacity: min(limit, max(input.readableBytes * 4, 1024)))
        try decoder.feed(input) { piece in
            var piece = piece
            out.writeBuffer(&piece)
        }
        try decoder.finish()
        return out
    }
}
