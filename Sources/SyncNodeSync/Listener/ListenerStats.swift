import Synchronization

/// Counts connections, requests and bytes, for ``Listener/status`` and the connection limits.
final class ListenerStats: Sendable {
    private let counts = Mutex(ListenerStatus())
    /// Admitted connections open now: in all, and by client address.
    private let admitted = Mutex<(total: Int, byAddress: [String: Int])>((0, [:]))

    /// Records a new connection; false when it is beyond `limits` (it is counted, not admitted).
    func connectionOpened(address: String, limits: ConnectionLimits) -> Bool {
        let admitted = self.admitted.withLock { open in
            guard open.total < limits.total, open.byAddress[address, default: 0] < limits.perAddress else { return false }
            open.total += 1
            open.byAddress[address, default: 0] += 1
            return true
        }
        counts.withLock { $0.activeConnections += 1; $0.totalConnections += 1; if !admitted { $0.refusedConnections += 1 } }
        return admitted
    }

    func connectionClosed(address: String, admitted: Bool) {
        counts.withLock { $0.activeConnections -= 1 }
        guard admitted else { return }
        self.admitted.withLock { open in
            let left = open.byAddress[address, default: 1] - 1
            open.byAddress[address] = left > 0 ? left : nil
            open.total -= 1
        }
    }
    func requestStarted() { counts.withLock { $0.activeRequests += 1; $0.totalRequests += 1 } }
    func requestFinished() { counts.withLock { $0.activeRequests -= 1 } }
    func sent(_ bytes: Int) { counts.withLock { $0.bytesSent += bytes } }
    func received(_ bytes: Int) { counts.withLock { $0.bytesReceived += bytes } }
    var snapshot: ListenerStatus { counts.withLock { $0 } }
}

/// One request in ``ListenerStatus/activeRequests``, for as long as it lives.
final class ActiveRequest: Sendable {
    private let stats: ListenerStats

    init(_ stats: ListenerStats) {
        self.stats = stats
        stats.requestStarted()
    }

    deinit { stats.requestFinished() }
}
