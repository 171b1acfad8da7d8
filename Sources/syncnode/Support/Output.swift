import Foundation
import SyncNodeStore

/// Writes results to stdout as JSON lines and messages to stderr.
enum Output {
    static func line(_ object: [String: DocumentValue]) {
        print(DocumentValue.dictionary(object).toJSON())
    }

    static func error(_ message: String) {
        write("syncnode: \(message)\n", to: .standardError)
    }

    static func progress(_ message: String) {
        write("\(message)\n", to: .standardError)
    }

    /// Writes at once, unbuffered (scripts wait for lines). False when the
    /// reader is gone (`syncnode peers | head -1`): Foundation's old
    /// `write(_:)` would trap on that EPIPE, since NIO ignores SIGPIPE.
    @discardableResult
    static func write(_ text: String, to handle: FileHandle) -> Bool {
        (try? handle.write(contentsOf: Data(text.utf8))) != nil
    }
}
