import SyncNodeSync

/// Lets `trust add` and `trust remove` take a fingerprint that starts with "-" as
/// `syncnode identity` prints it.
///
/// One fingerprint in 64 starts with "-" (base64url), and argument-parser reads such a word
/// as options. Pasting it should work without knowing to write `--` first, so the word is
/// moved after a `--` at the end, where options no longer follow.
enum FingerprintArgument {
    /// `arguments` (without the program name), with a dash-led fingerprint of `trust add` or
    /// `trust remove` moved after `--`; any other command line unchanged.
    static func separated(_ arguments: [String]) -> [String] {
        guard let trust = arguments.indices.first(where: { arguments[$0] == "trust" && $0 + 1 < arguments.count && ["add", "remove"].contains(arguments[$0 + 1]) }),
              !arguments.contains("--"),
              let index = arguments[(trust + 2)...].firstIndex(where: { $0.hasPrefix("-") && TLSIdentity.isFingerprint($0) })
        else { return arguments }
        var moved = arguments
        let fingerprint = moved.remove(at: index)
        return moved + ["--", fingerprint]
    }
}
