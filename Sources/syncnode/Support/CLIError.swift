import SyncNodeSync
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

    /// A pairing URL's invitation not honoured: the node's refusal (1), no address answering (3),
    /// or what else went wrong (1), as `pair` and `sync` report it.
    static func redemption(_ error: any Error) -> CLIError {
        switch error {
        case let refusal as CouchError: return .user("the node refused the invitation: \(refusal.reason)")
        case SyncError.connectionFailed: return .network("\(error)")
        default: return .user("\(error)")
        }
    }
}
