import ArgumentParser
import Foundation
import SyncNodeSync

/// A peer's replication URL as given on the command line.
enum PeerURL {
    /// `text` as an http(s) URL naming a database; a pairing URL (with `uuid=`
    /// or `fp=`) must be a whole one. Otherwise a usage error naming the option.
    static func parse(_ text: String, option: String) throws -> URL {
        guard let url = URL(string: text), let scheme = url.scheme?.lowercased(), scheme == "http" || scheme == "https",
              url.host != nil, url.path.split(separator: "/").first != nil else {
            throw ValidationError("\(option): not an http(s) URL of a database (give https://[user:password@]host:port/db): \(PairingURL.redacted(text))")
        }
        let items = URLComponents(url: url, resolvingAgainstBaseURL: false)?.queryItems ?? []
        if items.contains(where: { $0.name == "uuid" || $0.name == "fp" }) {
            do {
                _ = try PairingURL(string: text)
            } catch {
                throw ValidationError("\(option): \(error)")
            }
        }
        return url
    }
}
