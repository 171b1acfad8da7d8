import Synchronization
@testable import SyncNodeSync

/// The requests a test node served, as `METHOD path`, in order.
final class RequestLog: Sendable {
    private let requests = Mutex<[String]>([])

    /// A node that records each request it serves here.
    static func harness() async throws -> (ListenerHarness, RequestLog) {
        let log = RequestLog()
        let h = try await ListenerHarness(faultInjector: FaultInjector { method, path in
            log.requests.withLock { $0.append("\(method) \(path)") }
            return nil
        })
        return (h, log)
    }

    var all: [String] { requests.withLock { $0 } }

    /// Forgets what was served so far.
    func reset() { requests.withLock { $0 = [] } }
}
