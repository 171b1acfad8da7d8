import Synchronization
@testable import SyncNodeSync

/// The requests a test node served, as `METHOD path`, in order.
final class RequestLog: Sendable {
    private let requests = Mutex<[String]>([])

    /// A node that records each request it serves here; `status` may answer one instead (it is
    /// given the request and those served before it).
    static func harness(
        status: (@Sendable (_ request: String, _ before: [String]) -> Int?)? = nil
    ) async throws -> (ListenerHarness, RequestLog) {
        let log = RequestLog()
        let h = try await ListenerHarness(faultInjector: FaultInjector { method, path in
            let request = "\(method) \(path)"
            // The log so far is copied only for a test that asks (once per request).
            let before = log.requests.withLock { requests in
                defer { requests.append(request) }
                return status == nil ? [] : requests
            }
            return status?(request, before)
        })
        return (h, log)
    }

    var all: [String] { requests.withLock { $0 } }

    /// Forgets what was served so far.
    func reset() { requests.withLock { $0 = [] } }
}
