import Dispatch
import Foundation

/// SIGINT/SIGTERM handling. `listen()` takes the signals over at once, so a
/// signal that arrives before anyone waits (a script that stops a node as
/// soon as it prints "listening on") still ends the process gracefully.
struct Termination: Sendable {
    private let signals: AsyncStream<Void>

    static func listen() -> Termination {
        let (stream, continuation) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
        var sources: [DispatchSourceSignal] = []
        for sig in [SIGINT, SIGTERM] {
            signal(sig, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: sig, queue: .global())
            source.setEventHandler { continuation.yield() }
            source.resume()
            sources.append(source)
        }
        SignalSources.keep(sources)
        return Termination(signals: stream)
    }

    /// Returns on the first SIGINT or SIGTERM since `listen()`.
    func wait() async {
        for await _ in signals { return }
    }
}

/// Keeps signal sources alive for the process's life.
private enum SignalSources {
    nonisolated(unsafe) static var all: [DispatchSourceSignal] = []
    static func keep(_ sources: [DispatchSourceSignal]) { all += sources }
}
