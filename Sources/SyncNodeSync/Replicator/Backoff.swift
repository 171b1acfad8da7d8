/// A retry loop's place in its ``RetryPolicy``: how many failures in a row it has seen.
struct Backoff: Sendable {
    let policy: RetryPolicy
    private var failures = 0

    init(_ policy: RetryPolicy) {
        self.policy = policy
    }

    /// The wait before the next attempt; the one after it is twice as long.
    mutating func next() -> Duration {
        failures += 1
        return policy.delay(afterFailures: failures)
    }

    /// After a success: the next failure waits the shortest time again.
    mutating func reset() {
        failures = 0
    }
}
