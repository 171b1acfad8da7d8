import Foundation
import SyncNodeSync

/// A node found on the network and confirmed to answer at its address.
public struct Peer: Sendable, Equatable {
    /// What it advertises (name, port, uuid, databases, TLS fingerprint).
    public var record: ServiceRecord
    /// The address that answered (IPv4 preferred; a link-local IPv6 address carries its `%interface`).
    public var host: String
    /// Every address it resolved to.
    public var addresses: [String]

    /// The node's stable UUID (its checkpoints' key).
    public var uuid: String { record.uuid }
    /// The node's DNS-SD instance name.
    public var name: String { record.name }
    /// The port its listener answers on.
    public var port: Int { record.port }

    /// A peer seen at `host` (and `addresses`) with this TXT record.
    public init(record: ServiceRecord, host: String, addresses: [String]) {
        self.record = record
        self.host = host
        self.addresses = addresses
    }

    /// A URL of one of its databases that pins its certificate and names its
    /// UUID (a pairing URL), with these credentials.
    public func url(database: String, user: String? = nil, password: String? = nil) -> URL {
        // A zone index is percent-encoded in a URL (RFC 6874).
        let literal = host.contains(":") ? "[\(host.replacingOccurrences(of: "%", with: "%25"))]" : host
        let base = URL(string: "\(record.tls ? "https" : "http")://\(literal):\(port)/") ?? URL(fileURLWithPath: "/")
        return PairingURL(base: base, database: database, user: user, password: password, uuid: uuid, fingerprint: record.fingerprint).url
    }
}

/// What a ``Browser`` reports.
public enum PeerEvent: Sendable, Equatable {
    /// A peer answers (first time, or again after it was gone).
    case appeared(Peer)
    /// Its record or address changed.
    case updated(Peer)
    /// It withdrew its service or stopped answering.
    case disappeared(Peer)
}
