import Foundation

/// A command's JSON argument: the text given, or all of stdin when it is `-`.
enum JSONArgument {
    static func text(_ argument: String) -> String {
        argument == "-" ? String(decoding: FileHandle.standardInput.readDataToEndOfFile(), as: UTF8.self) : argument
    }
}
