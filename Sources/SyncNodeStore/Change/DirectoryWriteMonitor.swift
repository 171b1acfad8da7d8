import Dispatch
import Synchronization
#if os(Linux)
import Glibc
#endif

/// Tells subscribers when a file directly inside their directory is written,
/// through one inotify instance for the whole process (Linux only).
///
/// One instance, not one per database: a user may hold only 128 inotify
/// instances (`fs.inotify.max_user_instances`) across all their processes,
/// while watches are plentiful. After each wakeup the monitor rests for
/// ``coalescing`` before telling anyone: the kernel folds repeated events
/// meanwhile, so a heavy writer (an import writes its log page by page) costs
/// about 20 wakeups a second, not one per write.
package final class DirectoryWriteMonitor: Sendable {
    /// The process's monitor; nil where inotify is unavailable.
    package static let shared: DirectoryWriteMonitor? = DirectoryWriteMonitor()

    /// Writes within this window after a wakeup make one call per directory.
    static let coalescing = DispatchTimeInterval.milliseconds(50)

    /// A subscription; ``cancel()`` ends it.
    package final class Subscription: Sendable {
        fileprivate let watch: Int32
        fileprivate let monitor: DirectoryWriteMonitor
        fileprivate init(watch: Int32, monitor: DirectoryWriteMonitor) {
            self.watch = watch
            self.monitor = monitor
        }

        package func cancel() { monitor.remove(self) }
    }

    private struct State {
        /// Watch descriptor -> the subscriptions on it (a directory watched twice shares one).
        var handlers: [Int32: [(subscription: ObjectIdentifier, call: @Sendable () -> Void)]] = [:]
    }

    private let fd: Int32
    private let queue = DispatchQueue(label: "syncnode.directory-writes")
    private let state = Mutex(State())

    private init?() {
        #if os(Linux)
        fd = inotify_init1(Int32(IN_NONBLOCK) | Int32(IN_CLOEXEC))
        guard fd >= 0 else { return nil }
        let source = SendableDispatchSource(base: DispatchSource.makeReadSource(fileDescriptor: fd, queue: queue))
        // Lives as long as the process: the monitor is a process-wide singleton.
        source.base.setEventHandler { [self] in
            source.base.suspend()
            queue.asyncAfter(deadline: .now() + Self.coalescing) { [self] in
                for call in drain() { call() }
                source.base.resume()
            }
        }
        source.base.resume()
        #else
        return nil
        #endif
    }

    /// Calls `handler` (on a private serial queue) after writes to files directly in `directory`;
    /// with `replacements`, also after files there are created, renamed into place or removed
    /// (a file replaced whole, as by an editor or an atomic write).
    package func subscribe(directory: String, replacements: Bool = false, handler: @escaping @Sendable () -> Void) -> Subscription? {
        #if os(Linux)
        return state.withLock { s in
            let events = UInt32(IN_MODIFY) | (replacements ? UInt32(IN_CREATE) | UInt32(IN_MOVED_TO) | UInt32(IN_DELETE) : 0)
            // Added to the events of a watch on the same directory, never in their place.
            let watch = inotify_add_watch(fd, directory, events | UInt32(IN_MASK_ADD))
            guard watch >= 0 else { return nil }
            let subscription = Subscription(watch: watch, monitor: self)
            s.handlers[watch, default: []].append((ObjectIdentifier(subscription), handler))
            return subscription
        }
        #else
        return nil
        #endif
    }

    private func remove(_ subscription: Subscription) {
        state.withLock { s in
            s.handlers[subscription.watch]?.removeAll { $0.subscription == ObjectIdentifier(subscription) }
            if s.handlers[subscription.watch]?.isEmpty == true {
                s.handlers[subscription.watch] = nil
                #if os(Linux)
                _ = inotify_rm_watch(fd, subscription.watch)
                #endif
            }
        }
    }

    /// Reads every pending event; returns the handlers of the directories written, once each.
    private func drain() -> [@Sendable () -> Void] {
        #if os(Linux)
        var written: Set<Int32> = [], overflowed = false
        var buffer = [UInt8](repeating: 0, count: 16 * 1024)
        while true {
            let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            guard count > 0 else { break }
            var offset = 0
            // Each event: wd (Int32), mask, cookie, len (UInt32 each), then `len` bytes of name.
            while offset + 16 <= count {
                let (watch, length) = buffer.withUnsafeBytes { bytes in
                    (bytes.loadUnaligned(fromByteOffset: offset, as: Int32.self),
                     Int(bytes.loadUnaligned(fromByteOffset: offset + 12, as: UInt32.self)))
                }
                // Watch -1: the kernel's queue overflowed and events were lost; tell everyone.
                if watch < 0 { overflowed = true } else { written.insert(watch) }
                offset += 16 + length
            }
        }
        return state.withLock { s in
            (overflowed ? Array(s.handlers.keys) : Array(written)).flatMap { s.handlers[$0]?.map(\.call) ?? [] }
        }
        #else
        return []
        #endif
    }
}
