import Dispatch

/// A dispatch source that may cross threads. Dispatch sources are thread-safe
/// (resume, suspend and cancel may be called from anywhere), but Linux's
/// Dispatch does not mark them Sendable.
struct SendableDispatchSource<Source>: @unchecked Sendable {
    let base: Source
}
