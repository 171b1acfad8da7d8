/// How long to wait before trying again after failures in a row: `first` after one, doubling
/// with each further failure, never more than `maximum`.
///
/// One shape for every retry of the node: a replicator's transient failures
/// (``ReplicatorConfiguration/retryPolicy``), a mesh restarting a replication that stopped on an
/// error (``meshRestart``), and the listener slowing down password guessing (``passwordGuessing``).
public struct RetryPolicy: Sendable, Equatable {
    /// The wait after the first failure.
    public var first: Duration
    /// The longest wait.
    public var maximum: Duration

    /// A policy that waits `first`, then twice as long after each further failure, up to `maximum`.
    public init(first: Duration, maximum: Duration) {
        self.first = first
        self.maximum = maximum
    }

    /// The wait after `failures` failures in a row: none after none.
    public func delay(afterFailures failures: Int) -> Duration {
        guard failures > 0 else { return .zero }
        // 2^20 times any sensible `first` is past any sensible `maximum`; the cap keeps it from overflowing.
        return min(first * (1 << min(failures - 1, 20)), maximum)
    }

    /// A mesh node restarting a peer's replication that stopped on an error: 2 s, doubling, at most 30 s.
    public static let meshRestart = RetryPolicy(first: .seconds(2), maximum: .seconds(30))

    /// Password attempts past the limit for one address and user: 100 ms, doubling, at most 5 s.
    public static let passwordGuessing = RetryPolicy(first: .milliseconds(100), maximum: .seconds(5))
}
