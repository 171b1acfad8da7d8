import Crypto
import Foundation
import HTTPTypes
import Hummingbird

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
