/// What a save or delete does when the document changed since it was read.
public enum ConcurrencyControl: Sendable {
    /// Overwrite: the new revision becomes a child of the current one.
    case lastWriteWins
    /// Throw ``StoreError/conflict(documentID:)`` and change nothing.
    case failOnConflict
}

extension ConcurrencyControl {
    /// The decision for an edit of `documentID` that meets a newer revision:
    /// go ahead, or throw ``StoreError/conflict(documentID:)``.
    func overwrites(documentID: String) throws -> Bool {
        guard self == .lastWriteWins else { throw StoreError.conflict(documentID: documentID) }
        return true
    }
}
