import ArgumentParser
import Foundation
import SyncNodeDiscovery
import SyncNodeStore
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

    init(message: String, exitCode: Int32) {
        self.message = message
        self.exitCode = exitCode
    }

    /// Any error, with the exit code of its kind: the network or a peer failing (the listener
    /// cannot bind, a peer cannot be reached or answers 5xx, DNS-SD is down) is 3; the store,
    /// configuration, identity files, a peer's refusal and anything else are 1.
    init(_ error: any Error) {
        switch error {
        case let error as CLIError: self = error
        case let error as ValidationError: self = .usage(error.message)
        case let error as SyncError:
            switch error {
            case .listenerFailed, .connectionFailed: self = .network("\(error)")
            case .invalidIdentity, .invalidConfiguration: self = .user("\(error)")
            }
        case let error as CouchError: self = error.status >= 500 ? .network("peer answered \(error)") : .user("peer answered \(error)")
        case DiscoveryError.unavailable: self = .network("\(error)")
        case let error as StoreError: self = .user(error.description)
        default: self = .user("\(error)")
        }
    }

    /// Input that could not be read (a directory given as the file or as stdin, say): the
    /// system's reason, not Foundation's error dump, and how many documents were `imported`
    /// before, when some may have been.
    static func reading(_ source: String, _ error: any Error, imported: Int? = nil) -> CLIError {
        var reason = "\(error)"
        if let posix = (error as NSError).userInfo[NSUnderlyingErrorKey] as? NSError, posix.domain == NSPOSIXErrorDomain {
            reason = String(cString: strerror(Int32(truncatingIfNeeded: posix.code)))
        }
        return .user("cannot read \(source): \(reason)" + (imported.map { "; \($0) documents imported before" } ?? ""))
    }

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
