import ArgumentParser
import Foundation
import SyncNodeSync

/// A peer's replication URL as given on the command line.
enum PeerURL {
    /// `text` as an http(s) URL naming a database, its `fp=` (if any) a
    /// fingerprint; otherwise a usage error naming the option.
    static func parse(_ text: String, option: String) throws -> URL {
        guard let url = URL(string: text), let scheme = url.scheme?.lowercased(), scheme == "http" || scheme == "https",
              url.host != nil, url.path.split(separator: "/").first != nil else {
            throw ValidationError("\(option): not an http(s) URL of a database (give https://[user:password@]host:port/db): \(PairingURL.redacted(text))")
        }
        let fingerprint = URLComponents(url: url, resolvingAgainstBaseURL: false)?.queryItems?.first { $0.name == "fp" }?.value
        if let fingerprint, !TLSIdentity.isFingerprint(fingerprint) {
            throw ValidationError("\(option): fp=\(fingerprint) is not a certificate fingerprint (base64url SHA-256, as `syncnode identity` prints)")
        }
        return url
    }
}
