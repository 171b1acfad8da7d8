import NIOCore
#if canImport(CIsal)
import CIsal
#else
import CompressNIO
#endif

/// Gzip-encodes a stream handed over a piece at a time. Each piece leaves whole (a sync
/// flush): a feed's line reaches its client when it is written, not once the window fills, and
/// a piece costs a few bytes more than it would in one block.
///
/// On Linux the work is done by ISA-L's igzip at its level 1. On the benchmark documents it
/// leaves 23% of the bytes, as zlib's fastest level does, at about 700 MB/s on one core against
/// zlib's 200: a pull is bound by the two machines' CPU, and with zlib it took 1.2 times as long
/// as without gzip on loopback. Elsewhere zlib's level 1 does it.
final class GzipEncoder {
    #if canImport(CIsal)
    private let stream: UnsafeMutablePointer<isal_zstream>
    private let levelBuffer: UnsafeMutableRawBufferPointer
    #else
    private let compressor: ZlibCompressor
    #endif
    private var finished = false

    init() throws {
        #if canImport(CIsal)
        // About 80 KiB: zeroed in place, never built on the stack and copied.
        stream = .allocate(capacity: 1)
        UnsafeMutableRawPointer(stream).initializeMemory(as: UInt8.self, repeating: 0, count: MemoryLayout<isal_zstream>.size)
        isal_deflate_init(stream)
        levelBuffer = .allocate(byteCount: Int(cisal_level1_buffer_size()), alignment: 16)
        stream.pointee.level = 1
        stream.pointee.level_buf = levelBuffer.baseAddress?.assumingMemoryBound(to: UInt8.self)
        stream.pointee.level_buf_size = UInt32(levelBuffer.count)
        stream.pointee.gzip_flag = UInt16(IGZIP_GZIP)
        stream.pointee.flush = UInt16(SYNC_FLUSH)
        #else
        compressor = try ZlibCompressor(algorithm: .gzip, configuration: ZlibConfiguration(windowSize: 15, compressionLevel: 1))
        #endif
    }

    #if canImport(CIsal)
    deinit {
        stream.deallocate()
        levelBuffer.deallocate()
    }
    #endif

    /// `input`, encoded so far as it can be decoded on its own after what came before.
    func encode(_ input: ByteBuffer) throws -> ByteBuffer {
        guard input.readableBytes > 0, !finished else { return ByteBuffer() }
        return try deflate(input, end: false)
    }

    /// The end of the stream: what the encoder still holds, and gzip's trailer.
    func finish() throws -> ByteBuffer {
        guard !finished else { return ByteBuffer() }
        finished = true
        return try deflate(ByteBuffer(), end: true)
    }

    /// The whole of `input` as one gzip stream.
    static func encode(_ input: ByteBuffer) throws -> ByteBuffer {
        let encoder = try GzipEncoder()
        var out = try encoder.encode(input)
        var end = try encoder.finish()
        out.writeBuffer(&end)
        return out
    }

    #if canImport(CIsal)
    /// Runs igzip over `input` until it has taken all of it and given all it has (the stream's
    /// end too, with `end`), the output growing as needed.
    private func deflate(_ input: ByteBuffer, end: Bool) throws -> ByteBuffer {
        var out = ByteBufferAllocator().buffer(capacity: input.readableBytes + input.readableBytes / 8 + 64)
        stream.pointee.end_of_stream = end ? 1 : 0
        try input.withUnsafeReadableBytes { source in
            stream.pointee.next_in = UnsafeMutablePointer(mutating: source.baseAddress?.assumingMemoryBound(to: UInt8.self))
            stream.pointee.avail_in = UInt32(source.count)
            while true {
                if out.writableBytes < 64 { out.reserveCapacity(minimumWritableBytes: max(4096, out.readableBytes)) }
                try out.writeWithUnsafeMutableBytes(minimumWritableBytes: 0) { room in
                    stream.pointee.next_out = room.baseAddress?.assumingMemoryBound(to: UInt8.self)
                    stream.pointee.avail_out = UInt32(room.count)
                    let status = isal_deflate(stream)
                    guard status == COMP_OK else { throw CouchError(status: 500, error: "unknown_error", reason: "gzip encoding failed (igzip \(status))") }
                    return room.count - Int(stream.pointee.avail_out)
                }
                // Done once the input is taken and the output was not filled (a full one may
                // hold back more); at the end, once the stream is closed.
                let done = end ? stream.pointee.internal_state.state == ZSTATE_END
                    : stream.pointee.avail_in == 0 && stream.pointee.avail_out > 0
                if done { break }
            }
        }
        stream.pointee.next_in = nil
        return out
    }
    #else
    private func deflate(_ input: ByteBuffer, end: Bool) throws -> ByteBuffer {
        // Empty, but with storage: zlib is handed a real pointer.
        var input = input.readableBytes > 0 ? input : ByteBufferAllocator().buffer(capacity: 16)
        var out = ByteBufferAllocator().buffer(capacity: end ? 64 : compressor.maxSize(from: input))
        let flush: CompressNIOFlush = end ? .finish : .sync
        while true {
            let (written, left, room) = (out.readableBytes, input.readableBytes, out.writableBytes)
            do {
                try compressor.deflate(from: &input, to: &out, flush: flush)
                // A finish that returns has ended the stream; a sync flush that filled the buffer
                // may have more to give.
                if end || (out.writableBytes > 0 && input.readableBytes == 0) { return out }
            } catch let error as CompressNIOError where error == .bufferOverflow {
                // zlib wants more room, or (after a flush that filled the buffer exactly) had nothing more.
                if out.readableBytes == written, input.readableBytes == left {
                    if !end { return out }
                    if room > 0 { throw error }
                }
            }
            out.reserveCapacity(minimumWritableBytes: max(4096, out.readableBytes))
        }
    }
    #endif
}
