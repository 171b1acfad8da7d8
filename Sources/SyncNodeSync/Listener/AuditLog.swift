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
/// `GET /_node/events` (event `audit`) and whoever listens (``onEvent(_:)``).
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

/// Records each peer trusted or untrusted since it last looked at the trusted-peers file, by
/// whichever process changed it (`syncnode trust`, an invitation redeemed or revoked, the dashboard).
final class TrustAudit: Sendable {
    private let trust: TrustStore
    private let log: AuditLog
    private let known: Mutex<[String: TrustStore.Entry]>

    init(trust: TrustStore, log: AuditLog) {
        self.trust = trust
        self.log = log
        known = Mutex(Self.trusted(trust))
    }

    /// Compares the file with what was seen last; one event per peer that came or went.
    func check() {
        let now = Self.trusted(trust)
        let before = known.withLock { k in
            defer { k = now }
            return k
        }
        for (fingerprint, entry) in now.sorted(by: { $0.key < $1.key }) where before[fingerprint] == nil {
            log.record(.peerTrusted, "peer \(fingerprint) trusted with \(entry.scope)\(entry.note.isEmpty ? "" : " (\(entry.note))")", [
                "fingerprint": fingerprint, "scope": entry.scope.description, "invitation": entry.invitation ?? "",
            ])
        }
        for fingerprint in before.keys.sorted() where now[fingerprint] == nil {
            log.record(.peerUntrusted, "peer \(fingerprint) untrusted: its replications stop and its requests are refused", ["fingerprint": fingerprint])
        }
    }

    private static func trusted(_ trust: TrustStore) -> [String: TrustStore.Entry] {
        let entries = (try? trust.entries()) ?? []
        return Dictionary(entries.filter { !$0.revoked && $0.fingerprint != "-" }.map { ($0.fingerprint, $0) }) { $1 }
    }
}
