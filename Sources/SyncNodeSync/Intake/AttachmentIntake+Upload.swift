import Crypto
import Foundation
import NIOCore
import SyncNodeStore

/// Uploaded attachments (`PUT /{db}/{doc}/{attachment}`): the body streamed into the blob store.
extension AttachmentIntake {
    /// One attachment's bytes, streamed from `body` into `collection`'s blob store as they arrive:
    /// the stored blob's digest and length. Nothing is kept when it fails.
    ///
    /// - Parameters:
    ///   - gzip: the bytes are gzip-encoded; they are stored decoded.
    ///   - declaredMD5: the `md5-` digest the sender declares of the bytes as sent.
    ///   - limit: the most bytes stored (decoded).
    /// - Throws: `CouchError` 413 beyond `limit`, 400 for a digest that does not match
    ///   (`content_md5_mismatch`) or gzip that does not decode; `body`'s errors; `StoreError` when
    ///   the blob store fails.
    static func received<Body: AsyncSequence>(
        _ body: Body, gzip: Bool, declaredMD5: String?, limit: Int, into collection: DocumentCollection
    ) async throws -> (digest: String, length: Int) where Body.Element == ByteBuffer {
        let writer = try collection.blobWriter()
        let decoder = gzip ? try GzipDecoder(limit: limit) : nil
        var md5 = declaredMD5 != nil && decoder != nil ? Insecure.MD5() : nil
        do {
            for try await buffer in body {
                if let decoder {
                    buffer.withUnsafeReadableBytes { md5?.update(bufferPointer: $0) }
                    try decoder.feed(buffer) { piece in try piece.withUnsafeReadableBytes { try writer.append($0) } }
                    continue
                }
                guard writer.length + buffer.readableBytes <= limit else {
                    throw CouchError.tooLarge("Attachment is larger than \(limit) bytes")
                }
                try buffer.withUnsafeReadableBytes { try writer.append($0) }
            }
            try decoder?.finish()
            let sentMD5 = md5.map { "md5-" + Data($0.finalize()).base64EncodedString() }
            let digest = try writer.finish { storedMD5, _ in
                // The declared MD5 covers the body as sent: the stored bytes' own, unless it came encoded.
                if let declaredMD5, declaredMD5 != (sentMD5 ?? storedMD5) { throw ContentCoding.md5Mismatch }
            }
            return (digest, writer.length)
        } catch {
            writer.abandon()
            throw error
        }
    }
}
