import CQRencode
import Foundation

/// A QR code (made by libqrencode) of a text such as a pairing URL, rendered
/// for terminals as Unicode half blocks: one text line holds two module rows.
///
/// ```swift
/// let qr = try QRCode(pairing.url.absoluteString)
/// print(qr.text(style: .lightOnDark))
/// ```
public struct QRCode: Sendable, Equatable {
    /// Which modules the glyphs draw: a terminal paints glyphs in its text colour.
    public enum Style: Sendable {
        /// Glyphs on dark modules: for dark text on a light background.
        case darkOnLight
        /// Glyphs on light modules (and the quiet zone): for light text on a dark background, the usual terminal.
        case lightOnDark
    }

    /// Modules per side.
    public let size: Int
    /// Row-major, `true` = dark.
    public let modules: [Bool]

    /// Encodes `text` as 8-bit data with error correction level M (15% of the code can be damaged).
    /// - Throws: ``DiscoveryError/qrEncodingFailed(_:)`` when the text is too long for a QR code (over about
    ///   2,300 bytes) or libqrencode fails otherwise (the reason is its `errno`).
    public init(_ text: String) throws {
        guard let code = QRcode_encodeString(text, 0, QR_ECLEVEL_M, QR_MODE_8, 1) else {
            let reason = errno == ERANGE ? "\(text.utf8.count) bytes do not fit in a QR code" : String(cString: strerror(errno))
            throw DiscoveryError.qrEncodingFailed(reason)
        }
        defer { QRcode_free(code) }
        size = Int(code.pointee.width)
        // Bit 0 of each byte is the module's colour; the others are libqrencode's bookkeeping.
        modules = UnsafeBufferPointer(start: code.pointee.data, count: size * size).map { $0 & 1 == 1 }
    }

    /// Whether the module at (`x`, `y`) is dark; outside the code (the quiet zone) is light.
    public func isDark(x: Int, y: Int) -> Bool {
        x >= 0 && y >= 0 && x < size && y < size && modules[y * size + x]
    }

    /// The code as lines of `▀ ▄ █` and spaces, with `quietZone` light modules around it (the standard asks for 4).
    public func text(style: Style = .lightOnDark, quietZone: Int = 4) -> String {
        let range = -quietZone..<(size + quietZone)
        var lines: [String] = []
        for top in stride(from: range.lowerBound, to: range.upperBound, by: 2) {
            var line = ""
            for x in range {
                let upper = isDark(x: x, y: top) == (style == .darkOnLight)
                let lower = top + 1 < range.upperBound && isDark(x: x, y: top + 1) == (style == .darkOnLight)
                switch (upper, lower) {
                case (true, true): line += "█"
                case (true, false): line += "▀"
                case (false, true): line += "▄"
                case (false, false): line += " "
                }
            }
            lines.append(line)
        }
        return lines.joined(separator: "\n")
    }

    /// The code as an SVG image: one path of dark squares on a white background, with
    /// `quietZone` light modules around it, scaled by the viewer (`shape-rendering` keeps edges sharp).
    public func svg(quietZone: Int = 4) -> String {
        let side = size + 2 * quietZone
        var path = ""
        for y in 0..<size {
            for x in 0..<size where isDark(x: x, y: y) { path += "M\(x + quietZone),\(y + quietZone)h1v1h-1z" }
        }
        return #"<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 \#(side) \#(side)" width="\#(side * 6)" height="\#(side * 6)" shape-rendering="crispEdges">"#
            + #"<rect width="100%" height="100%" fill="white"/><path fill="black" d="\#(path)"/></svg>"#
    }
}
