/// An error the CLI reports as one line on stderr with its exit code
/// (1 user error, 2 usage, 3 network or peer failure).
struct CLIError: Error, CustomStringConvertible {
    let message: String
    let exitCode: Int32

    static func user(_ message: String) -> CLIError { CLIError(message: message, exitCode: 1) }
    static func usage(_ message: String) -> CLIError { CLIError(message: message, exitCode: 2) }
    /// The network or a peer failed: a port taken, a peer unreachable, DNS-SD down.
    static func network(_ message: String) -> CLIError { CLIError(message: message, exitCode: 3) }

    var description: String { message }
}
