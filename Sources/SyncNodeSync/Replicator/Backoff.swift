/// How long a replicator waits before trying again after a transient failure:
/// 0.2 s, doubling, at most `maximum` (``ReplicatorConfiguration/maxAttemptWaitTime``).
/// One policy for one-shot retries and continuous reconnects.
struct Backoff: Sendable {
    private static let first = Duration.milliseconds(200)
    private var delay = Backoff.first
    let maximum: Duration

    init(maximum: Duration) {
        self.maximum = maximum
    }

    /// The wait before the next attempt; the one after it is twice as long.
    mutating func next() -> Duration {
        defer { delay = min(delay * 2, maximum) }
        return min(delay, maximum)
    }

    /// After a success: the next failure waits the shortest time again.
    mutating func reset() {
        delay = Self.first
    }
}
