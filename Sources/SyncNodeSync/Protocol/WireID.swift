import Foundation

/// Random IDs in CouchDB's spelling: 32 lowercase hex digits (documents POSTed without an
/// `_id`, `/_uuids`, multipart boundaries).
enum WireID {
    static func random() -> String {
        UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "")
    }
}
