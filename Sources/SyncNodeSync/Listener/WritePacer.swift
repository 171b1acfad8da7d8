import NIOCore
import Synchronization

/// Keeps an answer's writer at most about 256 KiB ahead of what its
/// connection has taken.
///
/// The async writer beneath a response body learns that the socket is full
/// only once the event loop has run the writes queued before. A producer
/// faster than the loop (a document body read from the store and cut into
/// slices) could queue a whole 50 MB body, then its TLS copy, before its first
/// write was made to wait. Every 256 KiB the writer waits for the loop to
/// catch up, so the next write waits too when the socket is full.
final class WritePacer: Sendable {
    static let interval = 256 * 1024

    private let channel: any Channel
    private let ahead = Mutex(0)

    init(channel: any Channel) {
        self.channel = channel
    }

    /// Called before `buffer` is written.
    func pace(_ buffer: ByteBuffer) async throws {
        let due = ahead.withLock { bytes in
            bytes += buffer.readableBytes
            guard bytes >= Self.interval else { return false }
            bytes = 0
            return true
        }
        if due { try await channel.eventLoop.submit {}.get() }
    }
}
