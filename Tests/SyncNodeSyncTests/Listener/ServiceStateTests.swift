import Testing
@testable import SyncNodeSync

/// The start/stop pattern of the listener and the mesh node.
@Suite struct ServiceStateTests {
    struct Failed: Error {}

    /// A second start waits for the first and then finds the service running; a start that
    /// fails hands its error to those waiting on it.
    @Test func aSecondStartWaitsForTheFirst() async throws {
        let state = ServiceState<Int>()
        #expect(try await state.claimStart())
        let second = Task { try await state.claimStart() }
        try await Self.untilWaiting(state)
        #expect(state.endStart(.success(7)))
        #expect(try await second.value == false)
        #expect(state.withLock { $0 } == 7)

        #expect(state.takeForStop() == 7 && state.withLock { $0 } == nil)
        #expect(try await state.claimStart())
        let waiting = Task { try await state.claimStart() }
        try await Self.untilWaiting(state)
        #expect(!state.endStart(.failure(Failed())))
        await #expect(throws: Failed.self) { try await waiting.value }
        #expect(try await state.claimStart(), "after a failed start, the next one starts")
        _ = state.endStart(.failure(Failed()))
    }

    /// Until a start waits on the one under way.
    static func untilWaiting(_ state: ServiceState<Int>) async throws {
        let deadline = ContinuousClock.now.advanced(by: .seconds(30))
        while state.waitingStarts == 0, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(1)) }
        #expect(state.waitingStarts > 0, "the second start never waited")
    }

    /// A stop while a start is under way takes nothing, but the start learns it must not run.
    @Test func aStopDuringAStartIsNotLost() async throws {
        let state = ServiceState<Int>()
        #expect(try await state.claimStart())
        #expect(state.takeForStop() == nil)
        #expect(!state.endStart(.success(1)), "started after a stop: the caller stops it")
        #expect(state.withLock { $0 } == nil)
        #expect(try await state.claimStart(), "and a later start is a start")
        #expect(state.endStart(.success(2)))
    }

    /// A run whose start a stop undid ends at once: it does not wait for a group's shutdown (here
    /// there is no group, so waiting would last until the time limit).
    @Test(.timeLimit(.minutes(1))) func aRunStoppedWhileItStartsEnds() async throws {
        let state = ServiceState<Int>()
        var undone: [Int] = []
        try await state.runAsService(start: { _ in
            try await state.start({
                _ = state.takeForStop()
                return 1
            }, undo: { undone.append($0) }) != nil
        }, stop: {})
        #expect(undone == [1] && state.withLock { $0 } == nil)
    }
}
