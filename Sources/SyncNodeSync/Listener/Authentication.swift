import Foundation
import HTTPTypes
import Hummingbird
import Logging
import Synchronization
import SyncNodeStore

/// Who may make a request: HTTP Basic credentials or an `AuthSession`
/// cookie, checked against the listener's authenticator, with failed
/// passwords slowed down per address and user. Also answers `/_session`, where
/// clients log in and out and ask who they are.
struct Authentication: Sendable {
    /// nil: everyone is let in (an anonymous node).
    let authenticator: ListenerAuthenticator?
    /// Peers admitted by their client certificate; nil: none.
    let trustedPeers: TrustStore?
    let onUntrustedPeer: (@Sendable (_ fingerprint: String, _ address: String) -> Void)?
    let cookies: SessionCookies
    let rateLimiter: AuthRateLimiter
    /// Cookies are marked Secure over HTTPS.
    let secure: Bool
    let logger: Logger

    /// A request's authenticated principal.
    struct Login: Sendable {
        var principal: Principal
        /// A fresh cookie to send back, when the request's own is past a tenth of its life.
        var refreshedCookie: String?
        /// The principal as it would sign in now; nil once it no longer can (its certificate
        /// untrusted, its user removed, its password changed). What outlives the request checks it.
        var current: @Sendable () -> Principal?

        var user: String? { principal.name }
    }

    /// The sign-in of the request being handled, for the answers that outlive it (feeds, jobs).
    /// A class: a task-local of an optional function type was miscompiled by Swift 6.3's
    /// optimizer (a null type in `withValue`), crashing release builds on every request.
    @TaskLocal static var ofRequest: CurrentPrincipal?

    /// Who a request's sign-in names now (see ``Login/current``).
    final class CurrentPrincipal: Sendable {
        let current: @Sendable () -> Principal?
        init(_ current: @escaping @Sendable () -> Principal?) { self.current = current }
    }

    /// Nobody signed in (on a node with authentication).
    static let nobody = Login(principal: Principal(name: nil, roles: []), current: { Principal(name: nil, roles: []) })

    private func login(_ user: String, refreshedCookie: String? = nil) -> Login {
        let authenticator = authenticator
        // The key changes when the user's password does, and is gone with the user.
        let key = authenticator?.sessionKey(user)
        return Login(principal: Principal(name: user, roles: authenticator?.roles(user) ?? []), refreshedCookie: refreshedCookie) {
            guard let authenticator else { return Principal(name: user, roles: []) }
            guard let now = authenticator.sessionKey(user), now == key else { return nil }
            return Principal(name: user, roles: authenticator.roles(user))
        }
    }

    /// The user a request authenticates as: by password, session cookie or, for a peer,
    /// its client certificate; throws 401 (after a delay, past too many failures).
    func check(_ request: Request, context: ListenerContext) async throws -> Login {
        guard authenticator != nil else { return Login(principal: .anonymousNode, current: { .anonymousNode }) }
        let remoteAddress = context.remoteAddress
        if let (user, password) = Self.basicCredentials(request) {
            try await checkPassword(user, password, remoteAddress: remoteAddress)
            return login(user)
        }
        if let value = request.cookies[SessionCookies.name]?.value, !value.isEmpty {
            guard let authenticator, let (user, issued) = cookies.verify(value, userKey: authenticator.sessionKey) else {
                throw CouchError(status: 401, error: "unauthorized", reason: "The session cookie is invalid or has expired; log in again.")
            }
            let refreshed = cookies.needsRefresh(issued: issued) ? cookie(for: user) : nil
            return login(user, refreshedCookie: refreshed)
        }
        if let trustedPeers, let fingerprint = await context.clientFingerprint() {
            if let peer = trustedPeers.peer(clientFingerprint: fingerprint) {
                return Login(principal: Principal(name: peer.name, roles: ["peer"], scope: peer.scope)) {
                    trustedPeers.peer(clientFingerprint: fingerprint).map { Principal(name: $0.name, roles: ["peer"], scope: $0.scope) }
                }
            }
            onUntrustedPeer?(fingerprint, remoteAddress)
            throw CouchError(status: 401, error: "unauthorized", reason: "This node does not trust certificate \(fingerprint); its operator can admit it with `\(TrustStore.addCommand(fingerprint))`.")
        }
        // No password was tried: not a failure to limit (clients and peers' discovery probes ask first, then log in).
        throw CouchError.unauthorized
    }

    /// A `Set-Cookie` value for a fresh session of `user`.
    private func cookie(for user: String) -> String {
        cookies.header(value: cookies.value(user: user, userKey: authenticator?.sessionKey(user) ?? []), secure: secure)
    }

    private func checkPassword(_ user: String, _ password: String, remoteAddress: String) async throws {
        guard let authenticator else { return }
        // Guessing slows down, per address and user name; nobody is ever refused a right password.
        let wait = rateLimiter.delay(address: remoteAddress, user: user)
        if wait > .zero { try await Task.sleep(for: wait) }
        guard authenticator.check(user, password) else {
            rateLimiter.recordFailure(address: remoteAddress, user: user)
            // The user name is logged, never the password.
            logger.notice("authentication failed", metadata: ["user": "\(user)", "client": "\(remoteAddress)"])
            throw CouchError.unauthorized
        }
        rateLimiter.recordSuccess(address: remoteAddress, user: user)
    }

    static func basicCredentials(_ request: Request) -> (user: String, password: String)? {
        guard let header = request.headers[.authorization], header.lowercased().hasPrefix("basic "),
              let decoded = Data(base64Encoded: String(header.dropFirst(6)).trimmingCharacters(in: .whitespaces)),
              let credentials = String(data: decoded, encoding: .utf8),
              let colon = credentials.firstIndex(of: ":") else { return nil }
        return (String(credentials[..<colon]), String(credentials[credentials.index(after: colon)...]))
    }

    // MARK: - /_session

    /// `GET /_session`: who the request authenticates as. A wrong password is refused; no (or an
    /// expired) cookie answers with a null name, as CouchDB does.
    func sessionInfo(_ request: Request, context: ListenerContext) async throws -> Response {
        let basic = Self.basicCredentials(request) != nil
        let login = basic ? try await check(request, context: context)
            : (try? await check(request, context: context)) ?? Self.nobody
        let method = basic ? "default" : login.user?.hasPrefix("peer:") == true ? "certificate" : login.user != nil ? "cookie" : nil
        var info: [String: DocumentValue] = ["authentication_handlers": ["cookie", "default"]]
        if let method { info["authenticated"] = .string(method) }
        var response = HTTP.json(["ok": true, "userCtx": userContext(login.principal), "info": .dictionary(info)])
        if let cookie = login.refreshedCookie { response.headers[.setCookie] = cookie }
        return response
    }

    /// `POST /_session` (form or JSON `name` and `password`): logs in and sets the cookie.
    func logIn(_ request: Request, context: ListenerContext) async throws -> Response {
        let (user, password) = try await credentials(in: request)
        try await checkPassword(user, password, remoteAddress: context.remoteAddress)
        let roles = authenticator?.roles(user) ?? []
        var response = HTTP.json(["ok": true, "name": .string(user), "roles": .array(roles.map { .string($0) })])
        response.headers[.setCookie] = cookie(for: user)
        return response
    }

    /// `DELETE /_session`: clears the cookie.
    func logOut() -> Response {
        var response = HTTP.json(HTTP.ok)
        response.headers[.setCookie] = cookies.header(value: nil, secure: secure)
        return response
    }

    /// CouchDB's `userCtx`: the name (null when nobody signed in) and roles.
    private func userContext(_ principal: Principal) -> DocumentValue {
        ["name": principal.name.map { .string($0) } ?? .null, "roles": .array(principal.roles.map { .string($0) })]
    }

    /// `name` and `password` from a form or JSON body.
    private func credentials(in request: Request) async throws -> (String, String) {
        let type = request.headers[.contentType]?.lowercased() ?? ""
        var fields: [String: String] = [:]
        if type.hasPrefix("application/x-www-form-urlencoded") {
            let text = try await request.textBody(limit: 64 * 1024)
            for pair in text.split(separator: "&") {
                let parts = pair.split(separator: "=", maxSplits: 1).map {
                    $0.replacingOccurrences(of: "+", with: " ").removingPercentEncoding ?? String($0)
                }
                if parts.count == 2 { fields[parts[0]] = parts[1] }
            }
        } else if type.hasPrefix("application/json") {
            for (key, value) in try await request.jsonObject(limit: 64 * 1024) {
                if case .string(let s) = value { fields[key] = s }
            }
        } else {
            throw CouchError.unsupportedMediaType("POST /_session takes application/x-www-form-urlencoded or application/json")
        }
        guard let name = fields["name"], let password = fields["password"] else {
            throw CouchError.badRequest("POST /_session needs a name and a password")
        }
        return (name, password)
    }
}

/// Slows down password guessing: past `limit` failures within a minute for
/// one (address, user name), each further attempt for them waits first, as
/// ``RetryPolicy/passwordGuessing`` says (100 ms doubling per failure up to 5 s). A right password is never refused (someone
/// else's failures behind the same NAT cannot lock a user out) and clears the count.
final class AuthRateLimiter: Sendable {
    private let failures = Mutex<[String: (count: Int, since: ContinuousClock.Instant)]>([:])
    private let limit: Int
    private let window = Duration.seconds(60)

    init(limit: Int) { self.limit = limit }

    /// At most `maxEntries` keys, each with at most 64 characters of the user name: made-up
    /// names, long or many, cannot grow the table without bound.
    private static let maxEntries = 10_000
    private static func key(_ address: String, _ user: String) -> String { address + "\u{0}" + user.prefix(64) }

    /// Failures from one address, whatever the user names: guessing across made-up names
    /// (each a costly hash check) slows down too, past five times the per-user limit.
    private static func addressKey(_ address: String) -> String { address + "\u{0}\u{0}*" }

    /// How long the next attempt for (address, user) waits.
    func delay(address: String, user: String) -> Duration {
        failures.withLock { f in
            max(Self.delay(&f, Self.key(address, user), limit: limit, window: window),
                Self.delay(&f, Self.addressKey(address), limit: limit * 5, window: window))
        }
    }

    private static func delay(_ f: inout [String: (count: Int, since: ContinuousClock.Instant)], _ key: String, limit: Int, window: Duration) -> Duration {
        guard let entry = f[key] else { return .zero }
        if entry.since.duration(to: .now) > window {
            f[key] = nil
            return .zero
        }
        // The limit-th failure already earns the first wait.
        return RetryPolicy.passwordGuessing.delay(afterFailures: entry.count - limit + 1)
    }

    func recordFailure(address: String, user: String) {
        failures.withLock { f in
            let now = ContinuousClock.now
            for key in [Self.key(address, user), Self.addressKey(address)] {
                if let entry = f[key], entry.since.duration(to: now) <= window {
                    f[key] = (entry.count + 1, entry.since)
                } else {
                    f[key] = (1, now)
                }
            }
            if f.count > Self.maxEntries {
                f = f.filter { $0.value.since.duration(to: now) <= window }
                // Still full: a flood of fresh keys. Keep the most persistent guessers.
                if f.count > Self.maxEntries {
                    f = Dictionary(uniqueKeysWithValues: f.sorted { $0.value.count > $1.value.count }.prefix(Self.maxEntries / 2).map { ($0.key, $0.value) })
                }
            }
        }
    }

    func recordSuccess(address: String, user: String) {
        failures.withLock { _ = $0.removeValue(forKey: Self.key(address, user)) }
    }
}
