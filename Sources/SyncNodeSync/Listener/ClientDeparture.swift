import NIOCore
import Synchronization

/// Notices a client leaving while its request is being worked on, and tells whoever asked.
///
/// A client has left when the connection closes, or when its side of the connection ends: the
/// server allows half-closed connections, so the channel itself stays open until the answer is
/// written, and an HTTP client that ends its side before its answer came has given up on it (as
/// a reverse proxy takes it too). Work that only that client waits for (a one-shot `_replicate`,
/// a turn at the ``AnswerBudget``) asks to hear of it with ``onDeparture(_:)``, and forgets its
/// ask once done, so a long keep-alive connection collects none.
final class ClientDeparture: ChannelInboundHandler, RemovableChannelHandler, Sendable {
    typealias InboundIn = NIOAny

    private struct State {
        var departed = false
        var actions: [Int: @Sendable () -> Void] = [:]
        var next = 0
    }

    private let state = Mutex(State())

    /// The connection of the answer being written, for work deep inside it that must stop when
    /// its client leaves (set by the listener's responder while it handles a request and writes
    /// its answer).
    @TaskLocal static var connection: (any Channel)?

    /// Whether the client has left.
    var hasDeparted: Bool { state.withLock { $0.departed } }

    /// Calls `action` once when the client leaves (at once when it has); returns the ask, for
    /// ``forget(_:)``.
    func onDeparture(_ action: @escaping @Sendable () -> Void) -> Int {
        let ask = state.withLock { s -> Int? in
            guard !s.departed else { return nil }
            defer { s.next += 1 }
            s.actions[s.next] = action
            return s.next
        }
        guard let ask else {
            action()
            return -1
        }
        return ask
    }

    /// Drops an ask that ``onDeparture(_:)`` returned: the work it was for is done.
    func forget(_ ask: Int) {
        _ = state.withLock { $0.actions.removeValue(forKey: ask) }
    }

    private func depart() {
        let actions = state.withLock { s -> [@Sendable () -> Void] in
            guard !s.departed else { return [] }
            s.departed = true
            defer { s.actions = [:] }
            return Array(s.actions.values)
        }
        for action in actions { action() }
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case .inputClosed? = event as? ChannelEvent { depart() }
        context.fireUserInboundEventTriggered(event)
    }

    func channelInactive(context: ChannelHandlerContext) {
        depart()
        context.fireChannelInactive()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        depart()
    }

    /// The ``ClientDeparture`` of `channel`; nil when it has none.
    static func of(_ channel: any Channel) async -> ClientDeparture? {
        try? await channel.pipeline.handler(type: ClientDeparture.self).get()
    }

    /// Runs `operation` in a task of its own, cancelled when the client of `channel` leaves (or
    /// when the calling task is cancelled).
    static func cancelling<T: Sendable>(
        on channel: (any Channel)?, _ operation: @escaping @Sendable () async throws -> T
    ) async throws -> T {
        let run = Task { try await operation() }
        let departure = if let channel { await of(channel) } else { ClientDeparture?.none }
        let ask = departure?.onDeparture { run.cancel() }
        defer { if let ask { departure?.forget(ask) } }
        return try await withTaskCancellationHandler { try await run.value } onCancel: { run.cancel() }
    }
}
