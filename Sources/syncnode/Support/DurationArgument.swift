import ArgumentParser

/// A duration on the command line: `90s`, `15m`, `2h`, `7d`, or a number of seconds.
struct DurationArgument: ExpressibleByArgument, Sendable, Equatable {
    let duration: Duration
    let text: String

    /// `seconds` seconds, written `<seconds>s`.
    init(seconds: Int64) {
        duration = .seconds(seconds)
        text = "\(seconds)s"
    }

    init?(argument: String) {
        let units: [Character: Int64] = ["s": 1, "m": 60, "h": 3600, "d": 86_400]
        var digits = Substring(argument)
        var unit: Int64 = 1
        if let last = argument.last, let seconds = units[last] {
            unit = seconds
            digits = digits.dropLast()
        }
        guard let count = Int64(digits), count > 0, count <= Int64.max / unit / 1000 else { return nil }
        duration = .seconds(count * unit)
        text = argument
    }

    /// As written (`15m`), in help and the man page.
    var defaultValueDescription: String { text }

    static var defaultCompletionKind: CompletionKind { .default }
}
