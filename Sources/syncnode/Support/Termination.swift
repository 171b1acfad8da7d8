import Dispatch
import Foundation

enum Termination {
    /// Returns on SIGINT or SIGTERM.
    static func wait() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let once = OnceFlag()
            var sources: [DispatchSourceSignal] = []
            for sig in [SIGINT, SIGTERM] {
                signal(sig, SIG_IGN)
                let source = DispatchSource.makeSignalSource(signal: sig, queue: .global())
                source.setEventHandler { if once.take() { continuation.resume() } }
                source.resume()
                sources.append(source)
            }
            SignalSources.keep(sources)
        }
    }
}

/// Keeps signal sources alive for the process's life.
private enum SignalSources {
    nonisolated(unsafe) static var all: [DispatchSourceSignal] = []
    static func keep(_ sources: [DispatchSourceSignal]) { all += sources }
}

private final class OnceFlag: @unchecked Sendable {
    private let lock = NSLock()
    private var taken = false
    func take() -> Bool { lock.withLock { defer { taken = true }; return !taken } }
}
