import Foundation
import SyncNodeStore

/// How peers' addresses, IDs and sequences are written on the wire and in logs.
package enum WireURL {
    /// `scheme://host:port`, an IPv6 host in brackets (its zone index, if any, percent-encoded: RFC 6874).
    package static func root(scheme: String, host: String, port: Int) -> String {
        let literal = host.contains(":") && !host.hasPrefix("[") ? "[\(host.replacingOccurrences(of: "%", with: "%25"))]" : host
        return "\(scheme)://\(literal):\(port)"
    }

    /// The URL without credentials, for logs and errors.
    package static func redacted(_ url: URL) -> String {
        guard var c = URLComponents(url: url, resolvingAgainstBaseURL: false) else { return "(invalid URL)" }
        if c.password != nil { c.password = "***" }
        c.query = nil
        return c.string ?? "(invalid URL)"
    }

    /// A document ID or replication ID as one URL path segment.
    package static func escape(_ id: String) -> String {
        id.addingPercentEncoding(withAllowedCharacters: .alphanumerics.union(CharacterSet(charactersIn: "-._~"))) ?? id
    }

    /// Sequences are opaque: numbers (SyncNode, CouchDB 1.x) or strings (CouchDB 2+).
    package static func sequenceText(_ value: DocumentValue?) -> String {
        value == nil ? "0" : value.wireText
    }
}
