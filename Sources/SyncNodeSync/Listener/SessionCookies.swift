import Crypto
import Foundation

/// CouchDB's cookie sessions: `POST /_session` with a name and password
/// answers with an `AuthSession` cookie that authenticates later requests
/// until it expires. CouchDB's own replicator and browser clients log in
/// this way.
///
/// A cookie's value is the base64url of `name:issued:mac`: the user name,
/// the issue time in hex seconds since 1970 and the hex HMAC-SHA256 of
/// `name:issued` and the user's session key (a hash of the password, for
/// ``ListenerAuthenticator/users(_:)``) under the node's session secret.
/// Nothing is kept per session, so sessions survive a restart and cost nothing
/// to hold; a user removed or given a new password loses theirs, and a secret
/// made anew (deleting `.node/session-secret`) ends them all.
struct SessionCookies: Sendable {
    static let name = "AuthSession"

    private let key: SymmetricKey
    /// How long a cookie authenticates (CouchDB's default: 600 s), in whole seconds: cookies
    /// and `Max-Age` count in them.
    let timeout: Int

    init(secret: Data, timeout: Duration) {
        key = SymmetricKey(data: secret)
        // Rounded up to whole seconds, at least one.
        let (seconds, fraction) = timeout.components
        self.timeout = max(1, Int(seconds) + (fraction > 0 ? 1 : 0))
    }

    /// The cookie value for `user`, issued at `now`; `userKey` (the authenticator's
    /// session key for the user) is signed in, not written.
    func value(user: String, userKey: [UInt8], now: Date = Date()) -> String {
        let payload = "\(user):\(String(Int(now.timeIntervalSince1970), radix: 16))"
        return Self.base64URL(Data((payload + ":" + mac(payload, userKey)).utf8))
    }

    /// The user a cookie value authenticates and when it was issued; nil when
    /// it is malformed, forged, expired, or its user's key is gone or changed.
    func verify(_ value: String, now: Date = Date(), userKey: (String) -> [UInt8]?) -> (user: String, issued: Date)? {
        guard let data = Self.decodeBase64URL(value), let text = String(data: data, encoding: .utf8),
              let lastColon = text.lastIndex(of: ":") else { return nil }
        let payload = String(text[..<lastColon])
        let given = String(text[text.index(after: lastColon)...])
        guard let colon = payload.lastIndex(of: ":"), let key = userKey(String(payload[..<colon])),
              ListenerAuthenticator.constantTimeEquals(given, mac(payload, key)),
              let seconds = Int(payload[payload.index(after: colon)...], radix: 16) else { return nil }
        let issued = Date(timeIntervalSince1970: TimeInterval(seconds))
        let age = now.timeIntervalSince(issued)
        // A cookie from the future (a clock set back) is refused too, beyond a minute of skew.
        guard age < TimeInterval(timeout), age > -60 else { return nil }
        return (String(payload[..<colon]), issued)
    }

    /// Whether a cookie issued at `issued` should be replaced by a fresh one:
    /// after a tenth of its lifetime, as CouchDB does, so an active client's
    /// session never lapses.
    func needsRefresh(issued: Date, now: Date = Date()) -> Bool {
        now.timeIntervalSince(issued) > TimeInterval(timeout) / 10
    }

    /// The `Set-Cookie` header value that sets (or, with `value` nil, clears) the cookie.
    func header(value: String?, secure: Bool) -> String {
        var parts = ["\(Self.name)=\(value ?? "")", "Version=1", "Path=/", "HttpOnly"]
        if value != nil {
            parts.insert("Max-Age=\(timeout)", at: 2)
            parts.insert("Expires=\(HTTP.date(Date().addingTimeInterval(TimeInterval(timeout))))", at: 2)
        } else {
            parts.insert("Max-Age=0", at: 2)
            parts.insert("Expires=Thu, 01 Jan 1970 00:00:00 GMT", at: 2)
        }
        // Lax: another site's page cannot make a browser send the cookie with a POST, PUT or DELETE (no CSRF).
        // Pages of other origins authenticate with Basic auth through CORS instead.
        parts.append("SameSite=Lax")
        if secure { parts.append("Secure") }
        return parts.joined(separator: "; ")
    }

    private func mac(_ payload: String, _ userKey: [UInt8]) -> String {
        HMAC<SHA256>.authenticationCode(for: Data(payload.utf8) + [0] + userKey, using: key).map { String(format: "%02x", $0) }.joined()
    }

    private static func base64URL(_ data: Data) -> String {
        data.base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    private static func decodeBase64URL(_ text: String) -> Data? {
        guard text.utf8.count < 4096 else { return nil }
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        base64 += String(repeating: "=", count: (4 - base64.utf8.count % 4) % 4)
        return Data(base64Encoded: base64)
    }
}
