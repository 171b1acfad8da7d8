import Foundation

/// A value shared with callbacks (listeners, fault injectors).
public final class Shared<T: Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: T

    public init(_ value: T) { self.value = value }

    public func withLock<R>(_ body: (inout T) -> R) -> R { lock.withLock { body(&value) } }
}

/// Collects values from listener callbacks.
public final class Collector<T: Sendable>: @unchecked Sendable {
    private let items = Shared<[T]>([])

    public init() {}

    public func append(_ item: T) { items.withLock { $0.append(item) } }
    public var values: [T] { items.withLock { $0 } }

    /// Waits until `count` values arrived (or `timeout` passed) and returns them.
    public func wait(count: Int, timeout: Duration = .seconds(5)) async -> [T] {
        let deadline = ContinuousClock.now.advanced(by: timeout)
        while values.count < count, ContinuousClock.now < deadline {
            try? await Task.sleep(for: .milliseconds(5))
        }
        return values
    }
}
