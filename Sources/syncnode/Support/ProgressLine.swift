import Foundation
import Synchronization

/// Progress of long work on stderr: on a terminal a bar redrawn in place; otherwise (logs,
/// scripts) a line at most every second, and whenever the work settles.
final class ProgressLine: Sendable {
    private let label: String
    private let terminal: Bool
    private let last = Mutex<(shown: String, at: ContinuousClock.Instant, drawn: Bool)>(("", .now, false))

    /// `inPlace: false` writes lines even on a terminal: for several at once, whose bars would
    /// overwrite each other.
    init(label: String, inPlace: Bool = isatty(STDERR_FILENO) == 1) {
        self.label = label
        self.terminal = inPlace
    }

    /// Whether it redraws a bar in place.
    var isTerminal: Bool { terminal }

    /// Shows `counts`, with a bar at `fraction` of the way (nil: not known, no bar) on a terminal.
    /// `settled` (done, or waiting) shows it at once.
    func show(fraction: Double?, counts: String, settled: Bool = false) {
        let text: String? = last.withLock { l in
            if terminal {
                var line = "\r\(label)"
                if let fraction {
                    let done = min(1, max(0, fraction))
                    let filled = Int(done * 30)
                    line += " [\(String(repeating: "#", count: filled) + String(repeating: ".", count: 30 - filled))] \(Int(done * 100))%"
                }
                line += " \(counts)\u{1B}[K"
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

    /// Ends the bar's line so what follows starts on its own.
    func finish() {
        if last.withLock({ $0.drawn }) { Output.write("\n", to: .standardError) }
    }
}
