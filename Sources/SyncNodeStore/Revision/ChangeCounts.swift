import Synchronization

/// Recent answers to "how many documents changed after `since`" (CouchDB's `pending`), each
/// with the collection's `last_seq` when it was true.
///
/// Counting is a scan of the sequence index from `since` to the end. A reader paging through
/// a feed asks once per page with a later `since`, so counting afresh each time costs the
/// square of the collection's size: at a million documents in pages of 1,000, about
/// 500 million index entries, most of a pull's server time. While `last_seq` stays the same,
/// no row has been written or purged (both take a sequence), and the next answer is the last
/// one less the rows between the two `since`s: the page just read.
final class ChangeCounts: Sendable {
    struct Answer {
        let lastSequence: Int64
        let since: Int64
        let count: Int
    }

    /// A few at once: several readers may page through the same collection.
    private static let capacity = 8
    private let answers = Mutex<[Answer]>([])

    /// The latest answer this one can follow from: same `last_seq`, `since` at most `since`.
    func base(lastSequence: Int64, since: Int64) -> Answer? {
        answers.withLock { answers in
            answers.filter { $0.lastSequence == lastSequence && $0.since <= since }.max { $0.since < $1.since }
        }
    }

    func remember(_ answer: Answer) {
        answers.withLock { answers in
            answers.removeAll { $0.lastSequence != answer.lastSequence || $0.since == answer.since }
            if answers.count == Self.capacity { answers.removeFirst() }
            answers.append(answer)
        }
    }
}
