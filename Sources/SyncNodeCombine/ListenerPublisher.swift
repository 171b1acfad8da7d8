#if canImport(Combine)
import Combine
#else
import OpenCombine
#endif
import SyncNodeStore

/// A publisher over a listener API: each subscription registers its own
/// listener and removes it when cancelled. It never completes (cancel it).
enum ListenerPublisher {
    static func make<Output: Sendable>(
        _ register: @escaping @Sendable (@escaping @Sendable (Output) -> Void) -> ListenerToken
    ) -> AnyPublisher<Output, Never> {
        Deferred {
            let relay = Relay<Output>()
            let token = register { relay.subject.send($0) }
            return relay.subject.handleEvents(receiveCancel: { token.remove() })
        }
        .eraseToAnyPublisher()
    }
}

/// Subjects serialize `send` internally; this box only carries one across
/// the listener's queue, which the compiler cannot see is safe.
private final class Relay<Output>: @unchecked Sendable {
    let subject = PassthroughSubject<Output, Never>()
}
