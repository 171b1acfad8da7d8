import Foundation

/// What a process killed midway leaves behind: files or folders under a name of their own
/// (`.tmp-`, `.copying-`), removed once untouched for an hour. A younger one may be another
/// process's work in progress (a CLI command opens the database a serving node writes into).
enum AbandonedFiles {
    /// Removes the entries of `directory` named with `prefix` and untouched for an hour.
    static func remove(in directory: URL, prefix: String) {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
        let abandoned = Date().addingTimeInterval(-3600)
        for name in names where name.hasPrefix(prefix) {
            let url = directory.appendingPathComponent(name)
            let modified = (try? FileManager.default.attributesOfItem(atPath: url.path))?[.modificationDate] as? Date
            if let modified, modified > abandoned { continue }
            try? FileManager.default.removeItem(at: url)
        }
    }
}
