#if !canImport(Combine)
import OpenCombine

/// OpenCombine 0.14 (the Combine of Linux) has no `combineLatest`, which
/// joining live queries needs; this one is built from its `flatMap` (a
/// merge), `scan` and `compactMap`, and behaves as Combine's: after both
/// upstreams have published, every value from either publishes the latest
/// pair; it finishes when both finish and fails when either fails.
extension Publisher {
    /// The latest value of this publisher paired with the latest of `other`, published on every value of
    /// either once both have published; it finishes when both finish and fails when either fails.
    public func combineLatest<Other: Publisher>(_ other: Other) -> AnyPublisher<(Output, Other.Output), Failure>
    where Other.Failure == Failure {
        let events: [AnyPublisher<Latest<Output, Other.Output>, Failure>] = [
            map { Latest.first($0) }.eraseToAnyPublisher(),
            other.map { Latest.second($0) }.eraseToAnyPublisher(),
        ]
        return Publishers.Sequence<[AnyPublisher<Latest<Output, Other.Output>, Failure>], Failure>(sequence: events)
            .flatMap { $0 }
            .scan((Output?.none, Other.Output?.none)) { latest, event in
                switch event {
                case .first(let a): return (a, latest.1)
                case .second(let b): return (latest.0, b)
                }
            }
            .compactMap { latest in latest.0.flatMap { a in latest.1.map { (a, $0) } } }
            .eraseToAnyPublisher()
    }
}

private enum Latest<A, B> {
    case first(A)
    case second(B)
}
#endif
