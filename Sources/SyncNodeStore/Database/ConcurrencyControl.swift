/// What a save or delete does when the document changed since it was read.
public enum ConcurrencyControl: Sendable {
    /// Overwrite: the new revision becomes a child of the current one.
    case lastWriteWins
    /// Throw ``StoreError/conflict(documentID:)`` and change nothing.
    case failOnConflict
}
