import Testing
@testable import SyncNodeSync

/// One retry shape for the replicator, the mesh and the login limiter.
@Suite struct RetryPolicyTests {
    @Test func waitsDoubleFromTheFirstUpToTheMaximum() {
        let policy = RetryPolicy(first: .milliseconds(200), maximum: .seconds(1))
        #expect((0...5).map { policy.delay(afterFailures: $0) } == [.zero, .milliseconds(200), .milliseconds(400), .milliseconds(800), .seconds(1), .seconds(1)])
        // Thousands of failures in a row neither overflow nor pass the maximum.
        #expect(policy.delay(afterFailures: 10_000) == .seconds(1))
        #expect(RetryPolicy.meshRestart.delay(afterFailures: 1) == .seconds(2) && RetryPolicy.meshRestart.delay(afterFailures: 9) == .seconds(30))
    }

    @Test func aBackoffStartsOverAfterASuccess() {
        var backoff = Backoff(RetryPolicy(first: .milliseconds(200), maximum: .seconds(5)))
        #expect([backoff.next(), backoff.next(), backoff.next()] == [.milliseconds(200), .milliseconds(400), .milliseconds(800)])
        backoff.reset()
        #expect(backoff.next() == .milliseconds(200))
    }

    /// Past the limit, each further password attempt for one address and user waits longer.
    @Test func passwordGuessingIsSlowedDownPastTheLimit() {
        let limiter = AuthRateLimiter(limit: 3)
        var waits: [Duration] = []
        for _ in 0..<6 {
            waits.append(limiter.delay(address: "10.0.0.1", user: "ann"))
            limiter.recordFailure(address: "10.0.0.1", user: "ann")
        }
        #expect(waits == [.zero, .zero, .zero, .milliseconds(100), .milliseconds(200), .milliseconds(400)])
        #expect(limiter.delay(address: "10.0.0.2", user: "ann") == .zero)
    }
}
