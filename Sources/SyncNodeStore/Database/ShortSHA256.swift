#if canImport(CLibCrypto)
import CLibCrypto
#else
import Crypto
#endif

/// The SHA-256 of a short input: a digest entry or a document ID, which every write hashes
/// one to three of. On Linux it is OpenSSL's with the context on the stack, several times
/// cheaper for such inputs than a wrapper that allocates a context for each hash.
enum ShortSHA256 {
    /// Calls `body` with the 32 bytes of the SHA-256 of `bytes`.
    static func withHash<Result>(of bytes: UnsafeRawBufferPointer, _ body: (UnsafeRawBufferPointer) -> Result) -> Result {
        #if canImport(CLibCrypto)
        var digest: (UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0)
        return withUnsafeMutableBytes(of: &digest) { digest in
            syncnode_sha256(bytes.baseAddress, bytes.count, digest.bindMemory(to: UInt8.self).baseAddress)
            return body(UnsafeRawBufferPointer(digest))
        }
        #else
        return SHA256.hash(bufferPointer: bytes).withUnsafeBytes(body)
        #endif
    }
}
