import Foundation
import SyncNodeStore

/// Writes results to stdout as JSON lines and messages to stderr.
enum Output {
    static func line(_ object: [String: DocumentValue]) {
        print(DocumentValue.dictionary(object).toJSON())
    }

    static func error(_ message: String) {
        FileHandle.standardError.write(Data("syncnode: \(message)\n".utf8))
    }

    static func progress(_ message: String) {
        FileHandle.standardError.write(Data("\(message)\n".utf8))
    }
}
