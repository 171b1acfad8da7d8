import Foundation

/// Waits up to `seconds` for `condition`, looking every 20 ms; returns its last answer.
@discardableResult
public func eventually(within seconds: Int = 5, _ condition: () throws -> Bool) async throws -> Bool {
    let deadline = ContinuousClock.now.advanced(by: .seconds(seconds))
    while try !condition(), ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(20)) }
    return try condition()
}
