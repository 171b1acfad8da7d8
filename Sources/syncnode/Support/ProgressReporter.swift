import Foundation
import Synchronization
import SyncNodeStore
import SyncNodeSync

/// Shows a replicator's progress on stderr: a bar redrawn in place on a
/// terminal; otherwise (logs, scripts) a line at most every second and
/// whenever the counts settle (idle or stopped).
final class ProgressReporter: Sendable {
    private let line: ProgressLine

    /// `inPlace: false` writes lines even on a terminal: for several replications
    /// at once (`serve --sync-with`), whose bars would overwrite each other.
    init(label: String, inPlace: Bool = isatty(STDERR_FILENO) == 1) {
        line = ProgressLine(label: label, inPlace: inPlace)
    }

    func attach(to replicator: Replicator) -> ListenerToken {
        replicator.addChangeListener { [self] change in show(change.status) }
    }

    /// Ends the bar's line so what follows starts on its own.
    func finish() { line.finish() }

    func show(_ status: ReplicatorStatus) {
        // A failure is reported once, by the command, as its one-line error.
        if status.activity == .stopped, status.error != nil { return }
        let p = status.progress
        let settled = status.activity == .idle || status.activity == .stopped
        let fraction = p.total > 0 ? min(1, Double(p.completed) / Double(p.total)) : (settled ? 1 : 0)
        let counts = "\(p.completed)/\(p.total) changes, pushed \(status.result.pushed), pulled \(status.result.pulled)"
        line.show(fraction: fraction, counts: counts + (line.isTerminal ? " (\(status.activity.rawValue))" : ""), settled: settled)
    }
}
