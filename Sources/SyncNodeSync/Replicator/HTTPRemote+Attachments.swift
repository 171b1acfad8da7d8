import NIOCore
import SyncNodeStore

/// A CouchDB peer's attachments, read one at a time (`GET /{db}/{doc}/{attachment}?rev=`).
extension HTTPRemote: AttachmentSource {
    func download(
        id: String, rev: String, name: String, declaredLength: Int?, into sink: (UnsafeRawBufferPointer) throws -> Void
    ) async throws {
        // Each segment of a name escaped on its own: CouchDB reads `/` in a name as a path separator it joins again.
        let escapedName = name.split(separator: "/", omittingEmptySubsequences: false).map { WireURL.escape(String($0)) }.joined(separator: "/")
        let path = "\(db)/\(WireURL.escape(id))/\(escapedName)?rev=\(WireURL.escape(rev))"
        let response = try await transport.execute(transport.request(.GET, path, accept: false))
        let status = Int(response.status.code)
        guard PeerStatus.success.contains(status) else {
            let text = try await transport.text(of: response, upTo: 1 << 20)
            throw PeerStatus.error(status, answer: text)
        }
        // The stub's length, else the answer's, and never more than this node takes from a peer.
        var declared = maxAttachmentSize
        if let declaredLength { declared = min(declared, declaredLength) }
        if let length = response.headers.first(name: "Content-Length").flatMap(Int.init) { declared = min(declared, length) }
        var received = 0
        do {
            for try await piece in response.body {
                received += piece.readableBytes
                guard received <= declared else {
                    throw CouchError(status: 502, error: "bad_gateway", reason: "attachment '\(name)' of \(id) is longer than the \(declared) bytes declared or allowed")
                }
                try piece.withUnsafeReadableBytes(sink)
            }
        } catch {
            throw transport.timeouts.describe(error, peer: root)
        }
    }
}
