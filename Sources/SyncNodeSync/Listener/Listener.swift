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
    private let replications: ServerReplications
    private let compactions = Compactions()
    private let metrics = NodeMetrics()
    /// Tells feeds, jobs and the mesh that who may do what changed.
    let accessWatch: AccessWatch
    private let running = ServiceState<Running>()

    /// What a started listener holds.
    private struct Running: Sendable {
        let port: Int
        let identity: TLSIdentity?
        let group: ServiceGroup
        let task: Task<Void, Error>
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

    /// Binds and starts serving; returns once the port is open. Calling it again while started does
    /// nothing; calling it while another call is starting it waits for that one.
    /// - Throws: ``SyncError/listenerFailed(_:)`` when it cannot bind; ``SyncError/invalidIdentity(_:)`` when
    ///   the node's TLS identity cannot be loaded or saved; ``SyncError/invalidConfiguration(_:)`` when the
    ///   session secret cannot be written; NIOSSL's error when the identity's certificate or key is unusable
    ///   for TLS.
    public func start() async throws {
        // Two starts at once would bind twice: the second waits for the first.
        let started = try await running.start(bind) { stopped in
            // Stopped while it was starting: nothing of it is left serving.
            await stopped.group.triggerGracefulShutdown()
            _ = try? await stopped.task.value
        }
        guard let started else { return }
        logger.info("listening", metadata: ["port": "\(started.port)", "tls": "\(started.identity != nil)"])
    }

    /// Binds and serves; what runs once the port is open.
    private func bind() async throws -> Running {
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
        let plain = HTTPServerBuilder { responder in 
            ListenerHTTP1Channel(base: HTTP1Channel(responder: responder, configuration: http1), writeStallTimeout: idleTimeout)
        }
        let server: HTTPServerBuilder = try identity.map {
            try .tls(plain, configuration: $0.serverConfiguration(acceptingClientCertificates: config.trustedPeers != nil))
        } ?? plain
        let (ports, portContinuation) = AsyncStream.makeStream(of: Int.self)
        let app = Application(
            responder: responder, server: server,
            configuration: ApplicationConfiguration(address: .hostname(config.host, port: config.port), serverName: "SyncNode/0.1"),
            onServerRunning: { channel in
                portContinuation.yield(channel.localAddress?.port ?? 0)
                portContinuation.finish()
            },
            logger: logger)
        let group = ServiceGroup(configuration: .init(services: [app], gracefulShutdownSignals: [], logger: logger))
        let accessWatch = self.accessWatch, replications = self.replications
        let trustAudit = config.trustedPeers.map { TrustAudit(trust: $0, log: environment.auditLog) }
        let task = Task {
            defer { portContinuation.finish() }
            // Revocations reach what outlives a request: `_replicate` jobs here, feeds in their loops.
            let revalidating = accessWatch.onChange { Task { await replications.revalidate() } }
            // Each peer trusted or untrusted, by whichever process, is one audit event.
            let auditing = trustAudit.map { audit in accessWatch.onChange { audit.check() } }
            defer {
                accessWatch.remove(revalidating)
                auditing.map(accessWatch.remove)
            }
            try await withThrowingTaskGroup(of: Void.self) { tasks in
                tasks.addTask { await accessWatch.run() }
                tasks.addTask { try await group.run() }
                // The server ends (stopped, or failed): the watch with it.
                defer { tasks.cancelAll() }
                try await tasks.next()
            }
        }
        var iterator = ports.makeAsyncIterator()
        guard let port = await iterator.next() else {
            do {
                try await task.value
            } catch {
                throw SyncError.listenerFailed("cannot listen on \(config.host):\(config.port): \(error)")
            }
            throw SyncError.listenerFailed("the server stopped before listening")
        }
        return Running(port: port, identity: identity, group: group, task: task)
    }

    /// Stops gracefully: no new connections; requests in flight finish; open feeds end.
    public func stop() async {
        let stopping = running.takeForStop()
        await replications.stopAll()
        await stopping?.group.triggerGracefulShutdown()
        _ = try? await stopping?.task.value
        metrics.stop()
    }
}

extension Listener: Service {
    /// Serves (starting first if ``start()`` was not called) until its service group shuts
    /// down gracefully or is cancelled, then stops gracefully.
    /// - Throws: the errors of ``start()``; once serving, it returns without throwing.
    public func run() async throws {
        try await start()
        try? await gracefulShutdown()
        await stop()
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
