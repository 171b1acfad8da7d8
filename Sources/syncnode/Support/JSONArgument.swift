import Foundation
import SyncNodeStore

/// A command's JSON argument: the text given, or all of stdin when it is `-`.
enum JSONArgument {
    /// `text` as a Mango selector: a JSON object; nil when it is not one.
    static func selector(_ text: String) -> DocumentValue? {
        guard let value = try? DocumentValue(json: text), case .dictionary = value else { return nil }
        return value
    }

    /// - Throws: ``CLIError`` when stdin cannot be read (a directory given as stdin, say):
    ///   Foundation's `readDataToEndOfFile()` stopped the process on such an error.
    static func text(_ argument: String) throws -> String {
        guard argument == "-" else { return argument }
        do {
            return String(decoding: try FileHandle.standardInput.readToEnd() ?? Data(), as: UTF8.self)
        } catch {
            throw CLIError.reading("the JSON from stdin", error)
        }
    }
}
