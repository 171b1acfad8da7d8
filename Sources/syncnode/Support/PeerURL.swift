import ArgumentParser
import Foundation

/// A peer's replication URL as given on the command line.
enum PeerURL {
    /// `text` as an http(s) URL, or a usage error naming the option.
    static func parse(_ text: String, option: String) throws -> URL {
        guard let url = URL(string: text), let scheme = url.scheme?.lowercased(), scheme == "http" || scheme == "https",
              url.host != nil else {
            throw ValidationError("\(option): not an http(s) URL (give https://[user:password@]host:port/db): \(text)")
        }
        return url
    }
}
