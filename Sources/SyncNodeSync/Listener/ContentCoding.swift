import CompressNIO
import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import NIOCore

/// A request body's `Content-Encoding`. Gzip is decoded, with the same bound as the decoded
/// body has (CouchDB accepts gzip bodies, and a small upload must not unpack into an unbounded
/// one); any other coding is refused with 415, never stored as if it were the content.
enum ContentCoding: Equatable {
    case identity, gzip

    /// The request's coding.
    /// - Throws: 415 `bad_content_type` for a coding other than identity and gzip (or several).
    init(_ request: Request) throws {
        let value = request.headers[.contentEncoding]?.trimmingCharacters(in: .whitespaces).lowercased() ?? ""
        switch value {
        case "", "identity": self = .identity
        case "gzip", "x-gzip": self = .gzip
        default:
            throw CouchError.unsupportedMediaType("Content-Encoding '\(value)' is not accepted: send the body as it is, or gzip-encoded")
        }
    }

    /// The `Content-MD5` a request declares, as the `md5-` digest peers exchange; nil without one.
    /// - Throws: 400 `bad_request` when it is not the base64 of 16 bytes.
    static func declaredMD5(_ request: Request) throws -> String? {
        guard let value = request.headers[HTTPField.Name("Content-MD5")!]?.trimmingCharacters(in: .whitespaces) else { return nil }
        guard let raw = Data(base64Encoded: value), raw.count == 16 else {
            throw CouchError.badRequest("Content-MD5 '\(value)' is not the base64 of an MD5 digest (16 bytes)")
        }
        return "md5-" + raw.base64EncodedString()
    }

    static let md5Mismatch = CouchError(status: 400, error: "content_md5_mismatch", reason: "Possible message corruption: the body does not match its Content-MD5.")
}

/// Decodes a gzip stream a piece at a time, handing each decoded piece on; at most `limit`
/// decoded bytes (413 beyond), and a stream cut short is an error, not a shorter content.
final class GzipDecoder {
    private let decompressor: ZlibDecompressor
    private var window: ByteBuffer
    private let limit: Int
    /// The last four bytes seen: at the end, gzip's trailer with the decoded size (mod 2^32).
    private var tail: [UInt8] = []
    private var inputBytes = 0
    private(set) var decodedBytes = 0

    init(limit: Int) throws {
        decompressor = try ZlibDecompressor(algorithm: .gzip)
        window = ByteBufferAllocator().buffer(capacity: 64 << 10)
        self.limit = limit
    }

    /// Decodes `input`, calling `sink` with each decoded piece.
    /// - Throws: 413 past the limit; 400 for data that is not gzip, or that goes on after the
    ///   stream's end; what `sink` throws.
    func feed(_ input: ByteBuffer, sink: (ByteBuffer) throws -> Void) throws {
        var input = input
        inputBytes += input.readableBytes
        tail = Array((tail + input.readableBytesView).suffix(4))
        // Driven by hand rather than through CompressNIO's stream helper, which loops for good on
        // bytes after the end of the stream: here a round that moves nothing is an error.
        while input.readableBytes > 0 {
            let (read, written) = (input.readableBytes, window.readableBytes)
            do {
                try decompressor.inflate(from: &input, to: &window)
            } catch let error as CompressNIOError where error == .bufferOverflow || error == .inputBufferOverflow {
                // The window is full, or the input is used up: handled below.
            } catch {
                throw CouchError.badRequest("the gzip-encoded body cannot be decoded (\(error))")
            }
            let moved = input.readableBytes != read || window.readableBytes != written
            if window.writableBytes == 0 || input.readableBytes == 0 { try flush(sink) }
            if !moved, input.readableBytes > 0 {
                throw CouchError.badRequest("the gzip-encoded body goes on after the end of its stream")
            }
        }
        try flush(sink)
    }

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
