import Foundation
import PackagePlugin

/// Stamps `syncnode --version` at build time: before each build, `scripts/version.sh` writes
/// `buildVersion` (the VERSION file plus the git commit, or `$SYNCNODE_VERSION`), touching the
/// file only when the version changed.
@main
struct VersionStamp: BuildToolPlugin {
    func createBuildCommands(context: PluginContext, target: Target) throws -> [Command] {
        let output = context.pluginWorkDirectoryURL.appending(path: "Generated")
        let script = context.package.directoryURL.appending(path: "scripts/version.sh")
        var environment: [String: String] = [:]
        if let version = ProcessInfo.processInfo.environment["SYNCNODE_VERSION"] { environment["SYNCNODE_VERSION"] = version }
        return [.prebuildCommand(
            displayName: "Stamping the version of \(target.name)",
            executable: URL(fileURLWithPath: "/bin/sh"),
            arguments: [script.path, "--swift", output.appending(path: "BuildVersion.swift").path],
            environment: environment,
            outputFilesDirectory: output)]
    }
}
