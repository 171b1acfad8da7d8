import Foundation
import SyncNodeTestSupport
import Testing
@testable import SyncNodeDiscovery

/// The terminal text is read back the way a camera would: rasterized to an
/// image and decoded by an independent scanner (zbarimg, Debian's zbar-tools).
@Suite struct QRCodeTests {
    static let url = "https://ann:p%40ss@10.77.0.1:40123/default?uuid=0f8fad5b-d9cb-469f-a165-70867728950e&fp=n4bQgYhMfWWaL-qgxVrQFaO_TxsrC4Is0V1sFbDwCgg"

    @Test(arguments: [QRCode.Style.lightOnDark, .darkOnLight])
    func scannerReadsTheTextBack(style: QRCode.Style) throws {
        let code = try QRCode(Self.url)
        let text = code.text(style: style)
        #expect(try Self.scan(text: text, glyphsAreDark: style == .darkOnLight) == Self.url)
    }

    @Test func textHasTheQuietZoneAndTwoRowsPerLine() throws {
        let code = try QRCode("hello")
        let lines = code.text(style: .darkOnLight, quietZone: 4).split(separator: "\n", omittingEmptySubsequences: false)
        #expect(lines.count == (code.size + 8 + 1) / 2)
        #expect(lines.allSatisfy { $0.count == code.size + 8 })
        #expect(lines.first?.allSatisfy { $0 == " " } == true)   // light quiet zone
        // Finder pattern: the top-left module is dark.
        #expect(code.isDark(x: 0, y: 0))
        #expect(!code.isDark(x: -1, y: 0))
    }

    @Test func tooLongTextIsATypedError() {
        #expect(throws: DiscoveryError.self) { try QRCode(String(repeating: "x", count: 5000)) }
    }

    /// Rasterizes half-block text (8 pixels per module, dark = 0) to a PGM and decodes it with zbarimg.
    static func scan(text: String, glyphsAreDark: Bool) throws -> String {
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(Array.init)
        let width = lines.map(\.count).max() ?? 0
        var rows: [[Bool]] = []  // true = dark
        for line in lines {
            var upper: [Bool] = [], lower: [Bool] = []
            for x in 0..<width {
                let c: Character = x < line.count ? line[x] : " "
                let (u, l) = c == "█" ? (true, true) : c == "▀" ? (true, false) : c == "▄" ? (false, true) : (false, false)
                upper.append(u == glyphsAreDark)
                lower.append(l == glyphsAreDark)
            }
            rows.append(upper)
            rows.append(lower)
        }
        // A generous light margin, as paper around a printed code.
        let scale = 8, margin = 4
        let w = (width + 2 * margin) * scale, h = (rows.count + 2 * margin) * scale
        var pixels = [UInt8](repeating: 255, count: w * h)
        for (y, row) in rows.enumerated() {
            for (x, dark) in row.enumerated() where dark {
                for dy in 0..<scale {
                    let start = ((y + margin) * scale + dy) * w + (x + margin) * scale
                    for dx in 0..<scale { pixels[start + dx] = 0 }
                }
            }
        }
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("qr-\(UUID().uuidString).pgm")
        defer { try? FileManager.default.removeItem(at: file) }
        try (Data("P5\n\(w) \(h)\n255\n".utf8) + Data(pixels)).write(to: file)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/zbarimg")
        process.arguments = ["--nodbus", "--raw", "-q", file.path]
        let out = Pipe()
        process.standardOutput = out
        try process.run()
        let data = PipeIO.readToEnd(out.fileHandleForReading)
        process.waitUntilExit()
        #expect(process.terminationStatus == 0, "zbarimg found no code")
        return String(decoding: data, as: UTF8.self).trimmingCharacters(in: .newlines)
    }
}
