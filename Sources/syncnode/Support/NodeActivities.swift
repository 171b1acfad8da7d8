import ServiceLifecycle

/// What `serve` runs (its mesh node, then the banner), as the service of its group: `start`
/// begins it and returns how to stop it, which runs on graceful shutdown.
struct NodeActivities: Service {
    let start: @Sendable () async throws -> @Sendable () async -> Void

    func run() async throws {
        let stop = try await start()
        // Cancellation (not a signal) ends the wait too: stop either way.
        try? await gracefulShutdown()
        await stop()
    }
}
