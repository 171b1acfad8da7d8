import ServiceLifecycle

/// What `serve` runs beside its listener (advertising, browsing, syncs), as one service of its
/// group: `start` begins them and returns how to stop them, which runs on graceful shutdown.
struct NodeActivities: Service {
    let start: @Sendable () async throws -> @Sendable () async -> Void

    func run() async throws {
        let stop = try await start()
        // Cancellation (not a signal) ends the wait too: stop either way.
        try? await gracefulShutdown()
        await stop()
    }
}
