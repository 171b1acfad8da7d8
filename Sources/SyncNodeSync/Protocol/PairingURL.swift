import Foundation

/// A pairing URL: `https://host:port/db?uuid=<node UUID>&fp=<fingerprint>`, and for an
/// invitation `&invite=<token>&addr=<other addresses>`. Giving it to a replicator pins the
/// certificate and keys checkpoints on the UUID; a node redeems its invitation
/// (``InvitationClient``) to be trusted by certificate. It may also carry a Basic credential
/// in its user info (`https://user:password@host...`), for peers that sign in by password.
///
/// ```swift
/// let pairing = try PairingURL(string: scannedText)
/// var config = ReplicatorConfiguration(collection: tasks, target: .url(pairing.url))
/// ```
public struct PairingURL: Sendable, Equatable {
    /// The whole URL.
    public let url: URL
    /// The host (an IPv6 address without brackets).
    public let host: String
    /// The port: the URL's, else 443 for `https` and 80 for `http`.
    public let port: Int
    /// The database (keyspace) the URL names.
    public let database: String
    /// The user name from the userinfo, percent-decoded; nil when the URL has none.
    public let user: String?
    /// The password from the userinfo, percent-decoded; nil when the URL has none.
    public let password: String?
    /// The node's UUID (`uuid=`).
    public let uuid: String
    /// The base64url SHA-256 fingerprint of the node's certificate (`fp=`); nil for plain HTTP.
    public let fingerprint: String?
    /// The invitation token (`invite=`); nil when the URL carries none.
    public let invitation: String?
    /// The node's other addresses and names (`addr=`, comma-separated), to try when ``host`` does not answer.
    public let addresses: [String]

    /// Builds the URL for a listener's base URL and database.
    public init(base: URL, database: String, user: String? = nil, password: String? = nil, uuid: String, fingerprint: String?,
                invitation: String? = nil, addresses: [String] = []) {
        var components = URLComponents(url: base, resolvingAgainstBaseURL: false) ?? URLComponents()
        components.percentEncodedUser = user.map(Self.encodeUserInfo)
        components.percentEncodedPassword = password.map(Self.encodeUserInfo)
        components.percentEncodedPath = "/" + Self.encodeUserInfo(database)
        var items = [URLQueryItem(name: "uuid", value: uuid)]
        if let fingerprint { items.append(URLQueryItem(name: "fp", value: fingerprint)) }
        if let invitation { items.append(URLQueryItem(name: "invite", value: invitation)) }
        if !addresses.isEmpty { items.append(URLQueryItem(name: "addr", value: addresses.joined(separator: ","))) }
        components.queryItems = items
        url = components.url ?? base
        host = components.host.map(Self.unbracket) ?? ""
        port = components.port ?? (components.scheme == "http" ? 80 : 443)
        self.database = database
        self.user = user
        self.password = password
        self.uuid = uuid
        self.fingerprint = fingerprint
        self.invitation = invitation
        self.addresses = addresses
    }

    /// Parses a pairing URL (surrounding whitespace is ignored).
    /// - Throws: ``SyncError/invalidConfiguration(_:)`` naming what is missing or wrong: not an `http` or
    ///   `https` URL with a host, no database in the path, no `uuid=`, or (for `https`) no well-formed `fp=`.
    public init(string: String) throws {
        let text = string.trimmingCharacters(in: .whitespacesAndNewlines)
        guard let components = URLComponents(string: text), let url = components.url else {
            throw SyncError.invalidConfiguration("not a URL")
        }
        let scheme = components.scheme?.lowercased()
        guard scheme == "https" || scheme == "http", let host = components.host, !host.isEmpty else {
            throw SyncError.invalidConfiguration("a pairing URL is https://[user:password@]host:port/db?uuid=...&fp=...: \(Self.redacted(text))")
        }
        let database = components.path.split(separator: "/").first.map(String.init) ?? ""
        guard !database.isEmpty else { throw SyncError.invalidConfiguration("the pairing URL names no database") }
        let items = components.queryItems ?? []
        guard let uuid = items.first(where: { $0.name == "uuid" })?.value, !uuid.isEmpty else {
            throw SyncError.invalidConfiguration("the pairing URL has no uuid= (the node's identity)")
        }
        let fingerprint = items.first(where: { $0.name == "fp" })?.value
        if scheme == "https" {
            guard let fingerprint, TLSIdentity.isFingerprint(fingerprint) else {
                throw SyncError.invalidConfiguration("the pairing URL has no valid fp= (base64url SHA-256 of the certificate)")
            }
        }
        self.url = url
        self.host = Self.unbracket(host)
        self.port = components.port ?? (scheme == "http" ? 80 : 443)
        self.database = database
        self.user = components.user
        self.password = components.password
        self.uuid = uuid
        self.fingerprint = fingerprint
        invitation = items.first(where: { $0.name == "invite" })?.value.flatMap { $0.isEmpty ? nil : $0 }
        addresses = items.first(where: { $0.name == "addr" })?.value?.split(separator: ",").map { Self.unbracket(String($0)) } ?? []
    }

    /// The hosts to try, in order: ``host``, then each of ``addresses`` not already tried.
    public var hosts: [String] {
        var out = [host]
        for address in addresses where !out.contains(address) { out.append(address) }
        return out
    }

    /// The URL without its invitation, naming `host` (one of ``hosts``): what a replicator is given.
    public func replicationURL(host: String? = nil) -> URL {
        guard var components = URLComponents(url: url, resolvingAgainstBaseURL: false) else { return url }
        if let host { components.host = host.contains(":") ? "[\(host)]" : host }
        components.queryItems = components.queryItems?.filter { $0.name != "invite" && $0.name != "addr" }
        return components.url ?? url
    }

    /// This URL without its invitation token or address list (what is kept for a paired peer), naming `host`.
    public func withoutInvitation(host: String? = nil) -> PairingURL {
        let host = host ?? self.host
        let scheme = url.scheme?.lowercased() ?? "https"
        let base = URL(string: "\(scheme)://\(host.contains(":") ? "[\(host)]" : host):\(port)/") ?? url
        return PairingURL(base: base, database: database, user: user, password: password, uuid: uuid, fingerprint: fingerprint)
    }

    private static func unbracket(_ host: String) -> String {
        host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
    }

    /// `text` without its password, invitation and query, for messages and logs.
    public static func redacted(_ text: String) -> String {
        URL(string: text).map(WireURL.redacted) ?? "(not a URL)"
    }

    private static func encodeUserInfo(_ s: String) -> String {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~")
        return s.addingPercentEncoding(withAllowedCharacters: allowed) ?? s
    }
}
