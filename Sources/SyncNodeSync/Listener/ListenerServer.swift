import Logging
import ServiceLifecycle
import Synchronization

/// A listener's HTTP server, made but not yet serving. Its app runs in a service group of its
/// own, so that ``Listener/stop()`` can shut it down gracefully wherever it is served: in a task
/// of the listener's (``Listener/start()``) or in the caller's (``Listener/run()``), where the
/// caller's group's graceful shutdown reaches it too.
final class ListenerServer: Sendable {
    /// The TLS identity it serves with; nil over plain HTTP.
    let identity: TLSIdentity?
    /// Shuts the server down gracefully.
    let group: ServiceGroup
    /// Ends once ``serve()`` has returned.
    let served: Task<Void, Never>
    private let ended: AsyncStream<Void>.Continuation
    private let ports: AsyncStream<Int>
    private let portContinuation: AsyncStream<Int>.Continuation
    private let accessWatch: AccessWatch
    private let replications: ServerReplications
    private let trustAudit: TrustAudit?
    private let failed = Mutex<(any Error)?>(nil)

    /// `ports` is told the port once the app listens.
    init(identity: TLSIdentity?, app: any Service, ports: AsyncStream<Int>, portContinuation: AsyncStream<Int>.Continuation,
         accessWatch: AccessWatch, replications: ServerReplications, trustAudit: TrustAudit?, logger: Logger) {
        self.identity = identity
        group = ServiceGroup(configuration: .init(services: [app], gracefulShutdownSignals: [], logger: logger))
        let (endings, ended) = AsyncStream.makeStream(of: Void.self)
        self.ended = ended
        served = Task { for await _ in endings {} }
        self.ports = ports
        self.portContinuation = portContinuation
        self.accessWatch = accessWatch
        self.replications = replications
        self.trustAudit = trustAudit
    }

    /// Why serving ended, when it failed.
    var failure: (any Error)? { failed.withLock { $0 } }

    /// The port, once the app listens; nil when serving ended first (see ``failure``). Called once.
    func boundPort() async -> Int? {
        var iterator = ports.makeAsyncIterator()
        return await iterator.next()
    }

    /// Serves until the group shuts down (gracefully, or cancelled) or the app fails.
    /// - Throws: the app's error: it could not bind, or failed after it bound.
    func serve() async throws {
        defer {
            portContinuation.finish()
            ended.finish()
        }
        let accessWatch = self.accessWatch, replications = self.replications, group = self.group
        // Revocations reach what outlives a request: `_replicate` jobs here, feeds in their loops.
        let revalidating = accessWatch.onChange { Task { await replications.revalidate() } }
        // Each peer trusted or untrusted, by whichever process, is one audit event.
        let auditing = trustAudit.map { audit in accessWatch.onChange { audit.check() } }
        defer {
            accessWatch.remove(revalidating)
            auditing.map(accessWatch.remove)
        }
        do {
            try await withThrowingTaskGroup(of: Void.self) { tasks in
                tasks.addTask { await accessWatch.run() }
                tasks.addTask { try await group.run() }
                // The server ends (stopped, or failed): the watch with it.
                defer { tasks.cancelAll() }
                try await tasks.next()
            }
        } catch {
            failed.withLock { $0 = error }
            throw error
        }
    }
}
