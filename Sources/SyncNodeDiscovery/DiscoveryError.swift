/// Why discovery or pairing failed.
public enum DiscoveryError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The DNS-SD daemon cannot be reached; discovery starts by itself when it appears.
    case unavailable(String)
    /// A service's TXT record is not a SyncNode record.
    case invalidRecord(String)
    /// The text cannot be made into a QR code.
    case qrEncodingFailed(String)

    /// A one-line explanation: the area (`DNS-SD unavailable`, `DNS-SD record`, `QR code`), then the reason.
    public var description: String {
        switch self {
        case .unavailable(let reason): return "DNS-SD unavailable: \(reason)"
        case .invalidRecord(let reason): return "DNS-SD record: \(reason)"
        case .qrEncodingFailed(let reason): return "QR code: \(reason)"
        }
    }
}
