import Foundation
import Testing
@testable import SyncNodeSync

/// The memory budget big answers share: reservations are served in order, at most the whole
/// budget each, and a reader that leaves while waiting lets the next one in.
@Suite struct AnswerBudgetTests {
    @Test func reservationsWaitTheirTurnInOrder() async throws {
        let budget = AnswerBudget(capacity: 100)
        #expect(try await budget.reserve(60) == 60)
        let order = Collector<String>()
        // A big reservation queued first is not overtaken by a small one that would fit now.
        let big = Task {
            let taken = try await budget.reserve(80)
            order.append("big")
            return taken
        }
        while budget.waiting < 1 { await Task.yield() }
        let small = Task {
            let taken = try await budget.reserve(10)
            order.append("small")
            return taken
        }
        while budget.waiting < 2 { await Task.yield() }
        #expect(order.values.isEmpty)
        budget.release(60)
        let bigTaken = try await big.value
        let smallTaken = try await small.value
        #expect(order.values == ["big", "small"])
        #expect(bigTaken == 80 && smallTaken == 10 && budget.available == 10)
        budget.release(bigTaken)
        budget.release(smallTaken)
        #expect(budget.available == 100)
    }

    @Test func aReservationLargerThanTheBudgetTakesAllOfIt() async throws {
        let budget = AnswerBudget(capacity: 100)
        #expect(try await budget.reserve(5_000) == 100)
        #expect(budget.available == 0)
        budget.release(100)
        #expect(budget.available == 100)
    }

    @Test func aCancelledWaiterLetsTheNextOneIn() async throws {
        let budget = AnswerBudget(capacity: 100)
        let held = try await budget.reserve(90)
        let leaving = Task { try await budget.reserve(50) }
        while budget.waiting < 1 { await Task.yield() }
        let next = Task { try await budget.reserve(10) }
        while budget.waiting < 2 { await Task.yield() }
        leaving.cancel()
        await #expect(throws: CancellationError.self) { try await leaving.value }
        // The one behind the cancelled waiter fits in what is free, and gets it.
        #expect(try await next.value == 10)
        budget.release(held)
        budget.release(10)
        #expect(budget.available == 100)
    }
}
