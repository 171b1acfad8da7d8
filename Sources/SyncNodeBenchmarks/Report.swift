import Foundation

/// Times work and prints benchmark lines.
enum Report {
    @discardableResult
    static func time(_ body: () throws -> Void) rethrows -> Double {
        let start = DispatchTime.now().uptimeNanoseconds
        try body()
        return Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
    }

    static func timeAsync(_ body: () async throws -> Void) async rethrows -> Double {
        let start = DispatchTime.now().uptimeNanoseconds
        try await body()
        return Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
    }

    /// The fastest of `runs` timings: on this shared machine one sample swung
    /// the store's insert ratio from 2.6 to 6.0 for the same code.
    static func best(of runs: Int, _ body: () throws -> Void) rethrows -> Double {
        var best = Double.infinity
        for _ in 0..<runs { best = min(best, try time(body)) }
        return best
    }

    /// The fastest of `rounds` timings of each of two pieces of work, timed back to back in
    /// every round: this machine's speed drifts over tens of seconds, and a baseline timed
    /// half a minute before the work it is compared with swung the ratio by a half.
    static func bestInterleaved(
        of rounds: Int, baseline: () throws -> Void, ours: () throws -> Void
    ) rethrows -> (ours: Double, baseline: Double) {
        let pairs = try interleaved(rounds, baseline: { try time(baseline) }, ours: { try time(ours) })
        return (pairs.map(\.ours).min() ?? .nan, pairs.map(\.baseline).min() ?? .nan)
    }

    /// Medians over `rounds` paired timings, and the median of the rounds' ratios (ours /
    /// baseline): for differences of a few percent, which the fastest of five runs did not
    /// resolve on this machine (the same code measured 0.85 and 1.21 in two runs).
    static func pairedInterleaved(
        of rounds: Int, baseline: () throws -> Void, ours: () throws -> Void
    ) rethrows -> (ours: Double, baseline: Double, ratio: Double) {
        try pairedMeasurements(of: rounds, baseline: { try time(baseline) }, ours: { try time(ours) })
    }

    /// ``pairedInterleaved(of:baseline:ours:)`` over work that reports its own seconds (a child
    /// process that times the part that matters).
    static func pairedMeasurements(
        of rounds: Int, baseline: () throws -> Double, ours: () throws -> Double
    ) rethrows -> (ours: Double, baseline: Double, ratio: Double) {
        let pairs = try interleaved(rounds, baseline: baseline, ours: ours)
        return (median(pairs.map(\.ours)), median(pairs.map(\.baseline)), median(pairs.map { $0.ours / $0.baseline }))
    }

    /// The middle value (the upper one of an even count); 0 for none.
    static func median(_ values: [Double]) -> Double { values.isEmpty ? 0 : values.sorted()[values.count / 2] }

    /// Each piece of work measured once per round, back to back.
    private static func interleaved(
        _ rounds: Int, baseline: () throws -> Double, ours: () throws -> Double
    ) rethrows -> [(ours: Double, baseline: Double)] {
        try (0..<max(rounds, 1)).map { round in
            // Each goes first in every other round: a machine that slows down or warms up over a
            // round favours neither.
            if round.isMultiple(of: 2) {
                let baselineTime = try baseline()
                return (try ours(), baselineTime)
            }
            let oursTime = try ours()
            return (oursTime, try baseline())
        }
    }

    static func best(of runs: Int, _ body: () async throws -> Void) async rethrows -> Double {
        var best = Double.infinity
        for _ in 0..<runs { best = min(best, try await timeAsync(body)) }
        return best
    }

    static func rate(_ count: Int, _ seconds: Double) -> String {
        String(format: "%9.0f docs/s (%.3f s)", Double(count) / seconds, seconds)
    }

    /// One comparison line: our time against the baseline's, as docs/s and the ratio of times.
    static func compare(
        _ name: String, count: Int, ours: Double, baseline: Double, target: Double?, labels: (String, String) = ("store", "raw"),
        ratio: Double? = nil
    ) {
        var line = "\(name.padding(toLength: 18, withPad: " ", startingAt: 0)) \(labels.0) \(rate(count, ours))   \(labels.1) \(rate(count, baseline))   "
        // A median of the rounds' ratios is not the ratio of the median times beside it: say which it is.
        line += ratio == nil ? "ratio " : "median ratio "
        let ratio = ratio ?? ours / baseline
        line += String(format: "%.2f", ratio)
        if let target { line += " (target <= \(target): \(ratio <= target ? "met" : "MISSED"))" }
        print(line)
    }

    /// A running process's peak RSS (`VmHWM`), from /proc.
    static func peakRSSMegabytes(pid: Int32) -> Double {
        guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
              let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmHWM:") }),
              let kb = Double(line.split(separator: " ").dropFirst().first ?? "") else { return .nan }
        return kb / 1024
    }

    static func peakRSSMegabytes() -> Double {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        return Double(usage.ru_maxrss) / 1024
    }
}
