import Foundation
import Logging
import Synchronization
import SyncNodeStore

/// One change to who may reach a node, as the audit log keeps it. Never a secret: tokens and
/// passwords stay out; fingerprints, IDs and addresses go in.
public struct AuditEvent: Sendable, Equatable {
    /// What happened.
    public enum Kind: String, Sendable {
        case invitationMade = "invitation_made"
        case invitationRedeemed = "invitation_redeemed"
        case invitationRefused = "invitation_refused"
        case invitationRevoked = "invitation_revoked"
        case peerTrusted = "peer_trusted"
        case peerUntrusted = "peer_untrusted"
    }

    public let kind: Kind
    public let time: Date
    /// One line for people.
    public let message: String
    /// The particulars: `invitation`, `fingerprint`, `peer`, `address`, `reason`, `scope`.
    public let fields: [String: String]

    /// `{"kind","time","message", ...fields}`.
    public var json: DocumentValue {
        var object: [String: DocumentValue] = fields.mapValues { .string($0) }
        object["kind"] = .string(kind.rawValue)
        object["time"] = .string(ISO8601DateFormatter().string(from: time))
        object["message"] = .string(message)
        return .dictionary(object)
    }
}

/// The node's audit trail: each event is one log line (notice) and is kept, the last 200, for
/// `GET /_node/events` (event `audit`) and whoever listens (``onEvent``).
public final class AuditLog: Sendable {
    private let kept = Mutex<[AuditEvent]>([])
    private let listeners = Mutex<[@Sendable (AuditEvent) -> Void]>([])
    private let logger: Logger
    static let capacity = 200

    /// A log writing its lines to `logger`.
    public init(logger: Logger = Logger(label: "syncnode.audit")) {
        self.logger = logger
    }

    /// Records an event.
    public func record(_ kind: AuditEvent.Kind, _ message: String, _ fields: [String: String] = [:]) {
        let event = AuditEvent(kind: kind, time: Date(), message: message, fields: fields)
        logger.notice("\(message)", metadata: fields.mapValues { .string($0) }.merging(["event": .string(kind.rawValue)]) { $1 })
        kept.withLock { k in
            k.append(event)
            if k.count > Self.capacity { k.removeFirst(k.count - Self.capacity) }
        }
        for listener in listeners.withLock({ $0 }) { listener(event) }
    }

    /// The events kept, oldest first.
    public var events: [AuditEvent] { kept.withLock { $0 } }

    /// Calls `listener` with every event recorded from now on (on the recording task: keep it short).
    public func onEvent(_ listener: @escaping @Sendable (AuditEvent) -> Void) {
        listeners.withLock { $0.append(listener) }
    }
}
