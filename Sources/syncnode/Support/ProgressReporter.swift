import Foundation
import Synchronization
import SyncNodeStore
import SyncNodeSync

/// Shows a replicator's progress on stderr: a bar redrawn in place on a
/// terminal; otherwise (logs, scripts) a line at most every second and
/// whenever the counts settle (idle or stopped).
final class ProgressReporter: Sendable {
    private let label: String
    private let terminal: Bool
    private let last = Mutex<(shown: String, at: ContinuousClock.Instant, drawn: Bool)>(("", .now, false))

    /// `inPlace: false` writes lines even on a terminal: for several replications
    /// at once (`serve --sync-with`), whose bars would overwrite each other.
    init(label: String, inPlace: Bool = isatty(STDERR_FILENO) == 1) {
        self.label = label
        self.terminal = inPlace
    }

    func attach(to replicator: Replicator) -> ListenerToken {
        replicator.addChangeListener { [self] change in show(change.status) }
    }

    /// Ends the bar's line so what follows starts on its own.
    func finish() {
        if last.withLock({ $0.drawn }) { Output.write("\n", to: .standardError) }
    }

    func show(_ status: ReplicatorStatus) {
        // A failure is reported once, by the command, as its one-line error.
        if status.activity == .stopped, status.error != nil { return }
        let p = status.progress
        let counts = "\(p.completed)/\(p.total) changes, pushed \(status.result.pushed), pulled \(status.result.pulled)"
        let settled = status.activity == .idle || status.activity == .stopped
        let text: String? = last.withLock { l in
            if terminal {
                let fraction = p.total > 0 ? min(1, Double(p.completed) / Double(p.total)) : (settled ? 1 : 0)
                let filled = Int(fraction * 30)
                let bar = String(repeating: "#", count: filled) + String(repeating: ".", count: 30 - filled)
                let line = "\r\(label) [\(bar)] \(Int(fraction * 100))% \(counts) (\(status.activity.rawValue))\u{1B}[K"
                guard line != l.shown else { return nil }
                l.shown = line
                l.drawn = true
                return line
            }
            guard counts != l.shown, settled || l.at.duration(to: .now) >= .seconds(1) else { return nil }
            l.shown = counts
            l.at = .now
            return "\(label): \(counts)\n"
        }
        if let text { Output.write(text, to: .standardError) }
    }
}
