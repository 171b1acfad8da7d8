import SyncNodeSync

/// What a node advertises through DNS-SD: the service
/// `_syncnode._tcp` on the listener's port, with a TXT record
/// `v=1 uuid=… dbs=a,b tls=1 fp=… auth=basic`.
public struct ServiceRecord: Sendable, Equatable {
    /// The DNS-SD service type.
    public static let serviceType = "_syncnode._tcp"

    /// The instance name (the node's name; the advertiser may rename it on a collision).
    public var name: String
    /// The listener's port.
    public var port: Int
    /// The node's stable UUID: a peer's identity, whatever its name or address.
    public var uuid: String
    /// The keyspaces it shares (the TXT record's `dbs`).
    public var keyspaces: [Keyspace]
    /// Whether the listener speaks HTTPS.
    public var tls: Bool
    /// base64url SHA-256 of its DER certificate (with TLS).
    public var fingerprint: String?
    /// Whether it wants HTTP Basic credentials.
    public var requiresAuth: Bool
    /// A record read from the network whose `dbs` did not hold every keyspace (`more=1`).
    public var hasMore = false

    /// The record of a node to advertise.
    public init(name: String, port: Int, uuid: String, keyspaces: [Keyspace], tls: Bool, fingerprint: String?, requiresAuth: Bool) {
        self.name = name
        self.port = port
        self.uuid = uuid
        self.keyspaces = keyspaces
        self.tls = tls
        self.fingerprint = fingerprint
        self.requiresAuth = requiresAuth
    }

    /// The TXT record's `key=value` strings, in order. A TXT string holds at
    /// most 255 bytes (RFC 6763 §6.1): `dbs` lists the keyspaces that fit, and `more=1` says
    /// there are others (`GET /_node/keyspaces` lists them all).
    public var txt: [String] {
        let listed = listedKeyspaces
        var entries = ["v=1", "uuid=\(uuid)", "dbs=" + listed.map(\.name).joined(separator: ","), "tls=\(tls ? 1 : 0)"]
        if listed.count < keyspaces.count || hasMore { entries.append("more=1") }
        if let fingerprint { entries.append("fp=\(fingerprint)") }
        entries.append("auth=\(requiresAuth ? "basic" : "none")")
        return entries
    }

    /// The keyspaces `dbs` lists: those that fit in its 255 bytes, in order.
    public var listedKeyspaces: [Keyspace] {
        var size = "dbs=".utf8.count
        var listed: [Keyspace] = []
        for keyspace in keyspaces where size + keyspace.name.utf8.count + (listed.isEmpty ? 0 : 1) <= 255 {
            size += keyspace.name.utf8.count + (listed.isEmpty ? 0 : 1)
            listed.append(keyspace)
        }
        return listed
    }

    /// Reads a record from a resolved service's TXT strings (any order, keys in any case; the first
    /// occurrence of a key wins; unknown keys ignored).
    /// - Throws: ``DiscoveryError/invalidRecord(_:)`` for a version other than `v=1`, a missing uuid, or
    ///   `tls=1` without an `fp`.
    public init(name: String, port: Int, txt: [String]) throws {
        var fields: [String: String] = [:]
        for entry in txt {
            let parts = entry.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            // RFC 6763 §6.4: the first occurrence of a key wins.
            if fields[String(parts[0]).lowercased()] == nil { fields[String(parts[0]).lowercased()] = parts.count > 1 ? String(parts[1]) : "" }
        }
        guard fields["v"] == "1" else { throw DiscoveryError.invalidRecord("service '\(name)' has TXT version \(fields["v"] ?? "(none)"), expected v=1") }
        guard let uuid = fields["uuid"], !uuid.isEmpty else { throw DiscoveryError.invalidRecord("service '\(name)' has no uuid in its TXT record") }
        let tls = fields["tls"] == "1"
        guard !tls || fields["fp"].map({ !$0.isEmpty }) == true else {
            throw DiscoveryError.invalidRecord("service '\(name)' uses TLS but advertises no fp")
        }
        self.init(
            name: name, port: port, uuid: uuid,
            // An entry that is no keyspace is a peer's mistake: it is skipped, not synced.
            keyspaces: (fields["dbs"] ?? "").split(separator: ",").compactMap { Keyspace(String($0)) },
            tls: tls, fingerprint: tls ? fields["fp"] : nil, requiresAuth: fields["auth"] == "basic")
        hasMore = fields["more"] == "1"
    }
}
