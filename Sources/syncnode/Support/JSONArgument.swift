import Foundation
import SyncNodeStore

/// A command's JSON argument: the text given, or all of stdin when it is `-`.
enum JSONArgument {
    /// `text` as a Mango selector: a JSON object; nil when it is not one.
    static func selector(_ text: String) -> DocumentValue? {
        guard let value = try? DocumentValue(json: text), case .dictionary = value else { return nil }
        return value
    }

    static func text(_ argument: String) -> String {
        argument == "-" ? String(decoding: FileHandle.standardInput.readDataToEndOfFile(), as: UTF8.self) : argument
    }
}
