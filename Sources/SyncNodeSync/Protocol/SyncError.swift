/// Errors of the sync layer that are not a peer's HTTP answer.
public enum SyncError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The TLS certificate or key cannot be used.
    case invalidIdentity(String)
    /// The listener cannot start (port in use, bad address, ...).
    case listenerFailed(String)
    /// A configuration value is wrong.
    case invalidConfiguration(String)
    /// A peer could not be reached or dropped the connection; a replicator retries.
    case connectionFailed(String)

    /// A one-line explanation: the area (`TLS identity`, `listener`, `configuration`, `connection`), then
    /// the reason.
    public var description: String {
        switch self {
        case .invalidIdentity(let r): return "TLS identity: \(r)"
        case .listenerFailed(let r): return "listener: \(r)"
        case .invalidConfiguration(let r): return "configuration: \(r)"
        case .connectionFailed(let r): return "connection: \(r)"
        }
    }
}
