import Foundation
import SyncNodeStore

/// Writes results to stdout as JSON lines and messages to stderr.
enum Output {
    static func line(_ object: [String: DocumentValue]) {
        print(DocumentValue.dictionary(object).toJSON())
    }

    /// An error, or a warning when `message` starts with "warning:" (its level on the journal).
    static func error(_ message: String) {
        write(Journal.lines("syncnode: \(message)\n", level: message.hasPrefix("warning:") ? .warning : .error), to: .standardError)
    }

    static func progress(_ message: String) {
        write(Journal.lines("\(message)\n", level: .info), to: .standardError)
    }

    /// Writes at once, unbuffered (scripts wait for lines). False when the
    /// reader is gone (`syncnode peers | head -1`): Foundation's old
    /// `write(_:)` would trap on that EPIPE, since NIO ignores SIGPIPE.
    @discardableResult
    static func write(_ text: String, to handle: FileHandle) -> Bool {
        (try? handle.write(contentsOf: Data(text.utf8))) != nil
    }
}
