import Foundation
import Logging

/// Lines for systemd's journal. Under a service manager stderr is the journal's stream (systemd
/// names it in `$JOURNAL_STREAM`); a line that starts with a syslog priority such as `<4>` is
/// filed at that level, so `journalctl -p warning -u syncnode` shows warnings and errors only.
enum Journal {
    /// Whether stderr is the journal's stream: `$JOURNAL_STREAM` ("DEVICE:INODE") names it.
    static let isStandardError: Bool = {
        guard let stream = ProcessInfo.processInfo.environment["JOURNAL_STREAM"] else { return false }
        let parts = stream.split(separator: ":")
        var status = stat()
        guard parts.count == 2, let device = UInt64(parts[0]), let inode = UInt64(parts[1]),
              fstat(STDERR_FILENO, &status) == 0 else { return false }
        return UInt64(status.st_dev) == device && UInt64(status.st_ino) == inode
    }()

    /// `text` with each line prefixed by `level`'s syslog priority on the journal, unchanged elsewhere.
    static func lines(_ text: String, level: Logger.Level) -> String {
        guard isStandardError else { return text }
        let prefix = "<\(priority(level))>"
        return text.split(separator: "\n", omittingEmptySubsequences: false).enumerated()
            .map { $0.element.isEmpty && $0.offset > 0 ? "" : prefix + $0.element }.joined(separator: "\n")
    }

    static func priority(_ level: Logger.Level) -> Int {
        switch level {
        case .trace, .debug: 7
        case .info: 6
        case .notice: 5
        case .warning: 4
        case .error: 3
        case .critical: 2
        }
    }
}

/// swift-log's lines on the journal: priority, label and message, without the timestamp the
/// journal adds itself.
struct JournalLogHandler: LogHandler {
    let label: String
    var logLevel: Logger.Level
    var metadata: Logger.Metadata = [:]

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        let all = metadata.merging(event.metadata ?? [:]) { $1 }
        let fields = all.isEmpty ? "" : " " + all.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
        Output.write("<\(Journal.priority(event.level))>\(label): \(event.message)\(fields)\n", to: .standardError)
    }
}
