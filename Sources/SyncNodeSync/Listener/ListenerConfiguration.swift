import Crypto
import Foundation
import SyncNodeStore

/// Checks a user name and password (HTTP Basic). Return true to let the request in.
public struct ListenerAuthenticator: Sendable {
    let check: @Sendable (_ user: String, _ password: String) -> Bool
    /// Bytes that change when the user's password does, nil for an unknown user: session
    /// cookies are signed with them, so a cookie ends with its user or the user's password.
    let sessionKey: @Sendable (_ user: String) -> [UInt8]?
    /// A signed-in user's roles, matched against databases' `_security`; `_admin` makes a server admin.
    let roles: @Sendable (_ user: String) -> [String]

    /// Authenticates with a callback; `sessionKey` (see ``users(_:)``) lets session cookies
    /// end when a user goes or changes password; without it they last until they expire.
    /// `roles` gives a signed-in user's roles (default: server admin).
    public init(
        _ check: @escaping @Sendable (_ user: String, _ password: String) -> Bool,
        sessionKey: @escaping @Sendable (_ user: String) -> [UInt8]? = { _ in [] },
        roles: @escaping @Sendable (_ user: String) -> [String] = { _ in ["_admin"] }
    ) {
        self.check = check
        self.sessionKey = sessionKey
        self.roles = roles
    }

    /// Authenticates against fixed credentials, comparing in constant time. Each is a server admin.
    public static func users(_ users: [String: String]) -> ListenerAuthenticator {
        ListenerAuthenticator({ user, password in
            // Compare against every entry so timing reveals neither names nor passwords.
            var ok = false
            for (name, secret) in users {
                let nameMatches = constantTimeEquals(name, user)
                let secretMatches = constantTimeEquals(secret, password)
                if nameMatches && secretMatches { ok = true }
            }
            return ok
        }, sessionKey: { user in users[user].map { Array(SHA256.hash(data: Data($0.utf8))) } })
    }

    /// This authenticator for the users it knows (those with a session key), `other` for the rest.
    public func fallingBack(to other: ListenerAuthenticator) -> ListenerAuthenticator {
        ListenerAuthenticator({ user, password in
            sessionKey(user) != nil ? check(user, password) : other.check(user, password)
        }, sessionKey: { user in sessionKey(user) ?? other.sessionKey(user) },
        roles: { user in sessionKey(user) != nil ? roles(user) : other.roles(user) })
    }

    static func constantTimeEquals(_ a: String, _ b: String) -> Bool {
        constantTimeEquals(Array(a.utf8), Array(b.utf8))
    }

    static func constantTimeEquals(_ x: [UInt8], _ y: [UInt8]) -> Bool {
        var diff: UInt8 = x.count == y.count ? 0 : 1
        for i in 0..<max(x.count, y.count) {
            diff |= (i < x.count ? x[i] : 0) ^ (i < y.count ? y[i] : 0)
        }
        return diff == 0
    }
}

/// Makes a listener fail chosen requests (fault-injection tests): `status`
/// returns the HTTP status to answer with, or nil to serve the request.
package struct FaultInjector: Sendable {
    package let status: @Sendable (_ method: String, _ path: String) -> Int?
    /// While true, long-poll feeds do not see changes (as behind a proxy that holds them back):
    /// a continuous replicator pulling from this node idles while it is behind.
    package let deafFeeds: @Sendable () -> Bool
    /// Long polls end, empty, after this long at most (as behind a proxy that cuts idle requests
    /// short): a continuous replicator pulling from this node then runs passes that find nothing.
    package let longPollLimit: Duration?
    /// Returns when a request may be served: holding it is a slow link, or a peer caught
    /// mid-answer.
    package let hold: @Sendable (_ method: String, _ path: String) async -> Void

    package init(_ status: @escaping @Sendable (_ method: String, _ path: String) -> Int? = { _, _ in nil },
                 deafFeeds: @escaping @Sendable () -> Bool = { false }, longPollLimit: Duration? = nil,
                 hold: @escaping @Sendable (_ method: String, _ path: String) async -> Void = { _, _ in }) {
        self.status = status
        self.deafFeeds = deafFeeds
        self.longPollLimit = longPollLimit
        self.hold = hold
    }
}

/// How a ``Listener`` serves a node's databases.
public struct ListenerConfiguration: Sendable {
    /// The node's data directory.
    public var directory: NodeDirectory
    /// The databases served; nil serves every database in the directory and
    /// lets clients create and delete them (`PUT /db`, `DELETE /db`).
    public var databases: [String]?
    /// The port; 0 picks a free one (read it from ``Listener/port`` after start).
    public var port: Int
    /// The address to bind; "0.0.0.0" is every IPv4 interface, "::" every interface.
    public var host: String
    /// Plain HTTP instead of HTTPS.
    public var disableTLS: Bool
    /// The TLS identity; nil uses the node's persistent anonymous identity.
    public var tlsIdentity: TLSIdentity?
    /// Checks passwords (HTTP Basic, and `POST /_session` logins); nil lets everyone in.
    public var authenticator: ListenerAuthenticator?
    /// Peers that sign in by certificate: a client presenting a certificate this
    /// store trusts is admitted as that peer, without a password (mutual TLS).
    /// Nil asks clients for no certificate.
    public var trustedPeers: TrustStore?
    /// Refuse every write.
    public var readOnly: Bool
    /// Origins allowed by CORS ("*" for any).
    public var allowedOrigins: [String]
    /// The largest request body accepted (413 beyond), but for standalone attachment uploads.
    public var maxRequestBodySize: Int
    /// The largest attachment accepted by a standalone upload (`PUT /{db}/{doc}/{name}`), which
    /// streams to the blob store instead of being held in memory (413 beyond).
    public var maxAttachmentSize: Int
    /// Memory that large document bodies (over 256 KiB) may hold at once while answers are
    /// written (`_all_docs`, `_changes`, `_bulk_get`, `_find`, `open_revs`), shared by every
    /// answer: readers of big databases take turns rather than add up. A body larger than
    /// this still goes out, alone.
    public var answerMemoryBudget: Int = 96 << 20
    /// A connection that sends nothing for this long is closed: no TLS
    /// ClientHello, headers or a body that stop arriving, an idle keep-alive.
    /// A response being written (a long poll, a continuous feed) is exempt,
    /// but a client that takes none of it for this long once the connection's
    /// outgoing buffer is full is closed too (see `WriteStallGuard`).
    public var idleTimeout: Duration
    /// Failed logins one address may make for one user name per minute before
    /// each further attempt for them is delayed (100 ms, doubling, at most 5 s).
    public var authFailuresPerMinute: Int
    /// Connections open at once, in all; beyond, a connection's first request gets 503 and it is closed.
    public var maxConnections: Int
    /// Connections open at once from one client address (503 beyond).
    public var maxConnectionsPerAddress: Int
    /// How long an `AuthSession` cookie from `POST /_session` authenticates (CouchDB's
    /// default, 10 minutes; counted in whole seconds). A client that keeps using it gets a
    /// fresh one after a tenth of that.
    public var sessionTimeout: Duration

    /// A configuration serving `directory`; every parameter sets the property of the same name (see each
    /// property for what it does). The defaults suit a LAN node: HTTPS with the node's own identity on every
    /// IPv4 interface, a free port, and no authentication.
    public init(
        directory: NodeDirectory, databases: [String]? = nil, port: Int = 0, host: String = "0.0.0.0",
        disableTLS: Bool = false, tlsIdentity: TLSIdentity? = nil, authenticator: ListenerAuthenticator? = nil,
        readOnly: Bool = false, allowedOrigins: [String] = [],
        trustedPeers: TrustStore? = nil,
        maxRequestBodySize: Int = 64 << 20, maxAttachmentSize: Int = 16 << 30,
        idleTimeout: Duration = .seconds(60), authFailuresPerMinute: Int = 10, sessionTimeout: Duration = .seconds(600),
        maxConnections: Int = 2048, maxConnectionsPerAddress: Int = 256
    ) {
        self.directory = directory
        self.databases = databases
        self.port = port
        self.host = host
        self.disableTLS = disableTLS
        self.tlsIdentity = tlsIdentity
        self.authenticator = authenticator
        self.readOnly = readOnly
        self.allowedOrigins = allowedOrigins
        self.trustedPeers = trustedPeers
        self.maxRequestBodySize = maxRequestBodySize
        self.maxAttachmentSize = maxAttachmentSize
        self.idleTimeout = idleTimeout
        self.authFailuresPerMinute = authFailuresPerMinute
        self.sessionTimeout = sessionTimeout
        self.maxConnections = maxConnections
        self.maxConnectionsPerAddress = maxConnectionsPerAddress
    }
}
