// OpenSSL's SHA-256 for the short inputs of collection digests (an entry, a document ID).
// The low-level calls keep the context on the stack: about 56 ns an entry here, where a
// wrapper that allocates a context for each hash, or OpenSSL 3's one-shot SHA256() (which
// looks the algorithm up on every call), costs several times that. OpenSSL 3 marks them
// deprecated, not removed.
#define OPENSSL_SUPPRESS_DEPRECATED 1
#include <openssl/sha.h>

static inline void syncnode_sha256(const void *bytes, size_t count, unsigned char digest[32]) {
    SHA256_CTX context;
    SHA256_Init(&context);
    SHA256_Update(&context, bytes, count);
    SHA256_Final(digest, &context);
}
