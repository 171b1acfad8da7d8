import Foundation

/// A pairing URL (DESIGN.md §5): `https://[user:password@]host:port/db?uuid=<node UUID>&fp=<fingerprint>`.
/// Giving it to a replicator pins the certificate and keys checkpoints on the UUID.
public struct PairingURL: Sendable, Equatable {
    public var url: URL

    /// Builds the URL for a listener's base URL and database.
    public init(base: URL, database: String, user: String?, password: String?, uuid: String, fingerprint: String?) {
        var components = URLComponents(url: base, resolvingAgainstBaseURL: false) ?? URLComponents()
        components.percentEncodedUser = user.map(Self.encodeUserInfo)
        components.percentEncodedPassword = password.map(Self.encodeUserInfo)
        components.path = "/" + database
        var items = [URLQueryItem(name: "uuid", value: uuid)]
        if let fingerprint { items.append(URLQueryItem(name: "fp", value: fingerprint)) }
        components.queryItems = items
        url = components.url ?? base
    }

    private static func encodeUserInfo(_ s: String) -> String {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~")
        return s.addingPercentEncoding(withAllowedCharacters: allowed) ?? s
    }
}
