import Foundation
import Hummingbird
import HummingbirdCore
import HummingbirdTLS
import Logging
import NIOCore
import ServiceLifecycle
import Synchronization

/// Serves a node's databases over the CouchDB replication protocol, on
/// HTTPS (by default, with the node's persistent anonymous identity) and
/// HTTP Basic auth when an authenticator is set.
///
/// ```swift
/// let node = try NodeDirectory(url: dataDirectory)
/// let listener = Listener(config: ListenerConfiguration(directory: node, authenticator: .users(["ann": "secret"])))
/// try await listener.start()
/// print(listener.urls)          // https://<host>:<port>/
/// await listener.stop()
/// ```
public final class Listener: Sendable {
    /// The configuration it was made with.
    public let config: ListenerConfiguration
    /// The live parts it works with: its replications, audit log, console and callbacks.
    public let environment: ListenerEnvironment
    let logger: Logger
    private let stats = ListenerStats()
    /// The peers holding a connection to this listener now, by certificate fingerprint.
    package let connectedPeers = ConnectedPeers()
    private let replications: ServerReplications
    private let compactions = Compactions()
    private let metrics = NodeMetrics()
    /// Tells feeds, jobs and the mesh that who may do what changed.
    let accessWatch: AccessWatch
    private let running = ServiceState<Running>()

    /// What a bound listener holds.
    private struct Running: Sendable {
        let port: Int
        let identity: TLSIdentity?
        /// Shuts the server down gracefully.
        let group: ServiceGroup
        /// Ends once serving has ended, wherever it ran.
        let served: Task<Void, Never>
    }

    /// A listener for `config`, working with `environment`; nothing is bound or read until ``start()``.
    public init(
        config: ListenerConfiguration, environment: ListenerEnvironment = ListenerEnvironment(),
        logger: Logger = Logger(label: "syncnode.listener")
    ) {
        self.config = config
        self.environment = environment
        self.logger = logger
        replications = ServerReplications(tasks: environment.replicationTasks)
        accessWatch = AccessWatch(files: [config.trustedPeers?.file, config.directory.users.file].compactMap { $0 })
    }

    /// Calls `action` each time who may do what may have changed: a `_security` change here, or
    /// the trusted peers or users edited (by this process or another, looked at every 200 ms while
    /// the listener runs), until the returned token is passed to ``removeAccessChangeAction(_:)``.
    /// A mesh node checks its replications' peers again at each. Keep `action` short: start a task
    /// for longer work.
    public func onAccessChange(_ action: @escaping @Sendable () -> Void) -> Int {
        accessWatch.onChange(action)
    }

    /// Stops calling an action of ``onAccessChange(_:)``.
    public func removeAccessChangeAction(_ token: Int) {
        accessWatch.remove(token)
    }

    /// The bound port once started.
    public var port: Int? { running.withLock { $0?.port } }

    /// The TLS identity in use (nil with TLS disabled or before start).
    public var tlsIdentity: TLSIdentity? { running.withLock { $0?.identity } }

    /// Connections and requests open now and since start, and response body bytes sent.
    public var status: ListenerStatus { stats.snapshot }

    /// Base URLs, one per local IPv4 address (or the bound host).
    public var urls: [URL] {
        guard let port else { return [] }
        let scheme = config.disableTLS ? "http" : "https"
        let hosts = config.host == "0.0.0.0" || config.host == "::" ? LocalAddresses.ipv4() : [config.host]
        return hosts.compactMap { host in
            URL(string: "\(scheme)://\(host.contains(":") ? "[\(host)]" : host):\(port)/")
        }
    }

    /// Binds and starts serving in a task of its own; returns once the port is open. Calling it
    /// again while started does nothing; calling it while another call is starting it waits for
    /// that one. A server that fails after it bound is logged, and the listener reads as stopped.
    /// To have the caller's `ServiceGroup` see that failure, run the listener as a service
    /// (``run()``) instead.
    /// - Throws: ``SyncError/listenerFailed(_:)`` when it cannot bind; ``SyncError/invalidIdentity(_:)`` when
    ///   the node's TLS identity cannot be loaded or saved; ``SyncError/invalidConfiguration(_:)`` when the
    ///   session secret cannot be written; NIOSSL's error when the identity's certificate or key is unusable
    ///   for TLS.
    public func start() async throws {
        try await start { server in
            // Detached: a caller's graceful shutdown (a task-local) must not reach a server that
            // only stop() ends, as a service group's would.
            Task.detached { [weak self, logger] in
                do {
                    try await server.serve()
                } catch {
                    // Failed after it bound: it reads as stopped. A failure to bind is start()'s to throw.
                    let published = self?.running.withLock { running -> Bool in
                        guard running?.served == server.served else { return false }
                        running = nil
                        return true
                    } ?? false
                    logger.log(level: published ? .error : .debug, "the listener stopped serving", metadata: ["error": "\(error)"])
                }
            }
        }
    }

    /// Binds, has `launch` serve the server somewhere, and publishes what runs once the port is open.
    /// - Returns: false when it ran already (or another start did it meanwhile).
    @discardableResult
    private func start(serving launch: (ListenerServer) -> Void) async throws -> Bool {
        // Two starts at once would bind twice: the second waits for the first.
        let started = try await running.start({
            let server = try makeServer()
            launch(server)
            guard let port = await server.boundPort() else {
                await server.served.value
                throw SyncError.listenerFailed("cannot listen on \(config.host):\(config.port): \(server.failure.map { "\($0)" } ?? "the server stopped")")
            }
            return Running(port: port, identity: server.identity, group: server.group, served: server.served)
        }, undo: { stopped in
            // Stopped while it was starting: nothing of it is left serving.
            await stopped.group.triggerGracefulShutdown()
            await stopped.served.value
        })
        guard let started else { return false }
        logger.info("listening", metadata: ["port": "\(started.port)", "tls": "\(started.identity != nil)"])
        return true
    }

    /// Binds and serves in a child task of `tasks`, where the caller's graceful shutdown, cancellation
    /// and failure handling reach it (what ``run()`` does); returns once the port is open. The child
    /// task ends when the server stops, throwing when it failed after it bound.
    /// - Returns: false when it did not start it: it ran already (`tasks` then has no task of it),
    ///   or a ``stop()`` came while it started (its task in `tasks` has ended).
    /// - Throws: the errors of ``start()``.
    package func serve(in tasks: inout ThrowingTaskGroup<Void, any Error>) async throws -> Bool {
        try await start { server in tasks.addTask { try await server.serve() } }
    }

    /// The server this listener's configuration describes, not yet bound.
    private func makeServer() throws -> ListenerServer {
        let identity = config.disableTLS ? nil : try (config.tlsIdentity ?? config.directory.tlsIdentity())
        let rateLimiter = AuthRateLimiter(limit: config.authFailuresPerMinute)
        let authentication = Authentication(
            authenticator: config.authenticator, trustedPeers: config.trustedPeers, onUntrustedPeer: environment.onUntrustedPeer,
            cookies: SessionCookies(secret: try config.directory.sessionSecret(), timeout: config.sessionTimeout),
            rateLimiter: rateLimiter, secure: identity != nil, logger: logger)
        // Only a node that asks for passwords and speaks TLS admits peers by certificate.
        let redemption = InvitationRedemption(
            invitations: config.directory.invitations,
            trust: config.authenticator != nil && identity != nil ? config.trustedPeers : nil,
            uuid: config.directory.uuid, name: environment.console?.name, rateLimiter: rateLimiter, audit: environment.auditLog,
            onAdmitted: environment.onPeerAdmitted)
        let responder = ListenerResponder(
            handlers: Handlers(config: config, environment: environment, authentication: authentication, redemption: redemption, replications: replications, compactions: compactions, metrics: metrics,
                               port: { [weak self] in self?.port }, status: { [weak self] in self?.status ?? ListenerStatus() },
                               tlsIdentity: { [weak self] in self?.tlsIdentity }, accessWatch: accessWatch,
                               answerBudget: AnswerBudget(capacity: config.answerMemoryBudget), logger: logger),
            allowedOrigins: config.allowedOrigins, stats: stats, faultInjector: environment.faultInjector, logger: logger)
        let stats = self.stats
        let limits = ConnectionLimits(total: config.maxConnections, perAddress: config.maxConnectionsPerAddress)
        let idleTimeout = TimeAmount.nanoseconds(
            config.idleTimeout.components.seconds * 1_000_000_000 + config.idleTimeout.components.attoseconds / 1_000_000_000)
        let http1 = HTTP1Channel.Configuration(
            additionalChannelHandlers: [ConnectionCounter(stats: stats, limits: limits)],
            idleTimeout: idleTimeout,
            httpDecoderConfiguration: .init(maxHeaderFieldSize: 64 * 1024, maxHeaderListSize: 128 * 1024, maxHeaderFieldCount: 200))
        let connectedPeers = self.connectedPeers
        let plain = HTTPServerBuilder { responder in 
            ListenerHTTP1Channel(base: HTTP1Channel(responder: responder, configuration: http1), writeStallTimeout: idleTimeout, connectedPeers: connectedPeers)
        }
        let server: HTTPServerBuilder = try identity.map {
            try .tls(plain, configuration: $0.serverConfiguration(acceptingClientCertificates: config.trustedPeers != nil))
        } ?? plain
        let (ports, portContinuation) = AsyncStream.makeStream(of: Int.self, bufferingPolicy: .bufferingNewest(1))
        let app = Application(
            responder: responder, server: server,
            configuration: ApplicationConfiguration(address: .hostname(config.host, port: config.port), serverName: "SyncNode/0.1"),
            onServerRunning: { channel in
                portContinuation.yield(channel.localAddress?.port ?? 0)
                portContinuation.finish()
            },
            logger: logger)
        return ListenerServer(
            identity: identity, app: app, ports: ports, portContinuation: portContinuation, accessWatch: accessWatch,
            replications: replications, trustAudit: config.trustedPeers.map { TrustAudit(trust: $0, log: environment.auditLog) }, logger: logger)
    }

    /// Stops gracefully: no new connections; requests in flight finish; open feeds end.
    public func stop() async {
        let stopping = running.takeForStop()
        await replications.stopAll()
        await stopping?.group.triggerGracefulShutdown()
        await stopping?.served.value
        metrics.stop()
    }
}

extension Listener: Service {
    /// Serves in the calling task until its service group shuts down gracefully or is cancelled,
    /// or ``stop()`` is called, then stops gracefully. When ``start()`` was called first, it only
    /// waits for the group's shutdown and then stops.
    /// - Throws: the errors of ``start()``, and the server's error when it fails after it bound
    ///   (the group then shuts its other services down).
    public func run() async throws {
        try await running.runAsService(start: { tasks in try await serve(in: &tasks) }, stop: stop)
    }
}

/// The machine's addresses: what a certificate names and a pairing URL lists.
package enum LocalAddresses {
    /// The IPv4 addresses, loopback last.
    package static func ipv4() -> [String] {
        var out: [String] = []
        var loopback: [String] = []
        guard let interfaces = try? System.enumerateDevices() else { return ["127.0.0.1"] }
        for device in interfaces {
            guard let address = device.address, case .v4 = address, let ip = address.ipAddress else { continue }
            if ip.hasPrefix("127.") { loopback.append(ip) } else if !out.contains(ip) { out.append(ip) }
        }
        return out + (loopback.isEmpty ? ["127.0.0.1"] : loopback)
    }

    /// The IPv6 addresses a peer elsewhere on the network can reach: no loopback, and no
    /// link-local ones (they need the peer's interface name, which a URL cannot know).
    package static func ipv6() -> [String] {
        guard let interfaces = try? System.enumerateDevices() else { return [] }
        var out: [String] = []
        for device in interfaces {
            guard let address = device.address, case .v6 = address, let ip = address.ipAddress?.split(separator: "%").first.map(String.init),
                  ip != "::1", !ip.lowercased().hasPrefix("fe80"), !out.contains(ip) else { continue }
            out.append(ip)
        }
        return out
    }

    /// Every way a peer might reach a listener bound to `host`: for a wildcard, the IPv4
    /// addresses, then the IPv6 ones (when it listens on them), then the machine's `.local`
    /// name, and loopback only when there is nothing else (on another machine it names that
    /// machine); otherwise `host` alone.
    package static func reachable(boundTo host: String) -> [String] {
        guard host == "0.0.0.0" || host == "::" else { return [host] }
        var out = ipv4()
        let loopback = out.filter { $0.hasPrefix("127.") }
        out.removeAll { $0.hasPrefix("127.") }
        if host == "::" { out += ipv6() }
        if out.isEmpty { return loopback }
        let name = ProcessInfo.processInfo.hostName.split(separator: ".").first.map(String.init) ?? ""
        if !name.isEmpty, name != "localhost" { out.append(name + ".local") }
        return out
    }
}
