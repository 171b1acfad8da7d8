import Foundation

/// Dates are stored as ISO-8601 strings in UTC with milliseconds, which sort
/// as text in time order.
enum ISODate {
    private static let withFraction = Date.ISO8601FormatStyle(includingFractionalSeconds: true)
    private static let withoutFraction = Date.ISO8601FormatStyle()

    static func string(from date: Date) -> String {
        withFraction.format(date)
    }

    static func date(from string: String) -> Date? {
        (try? withFraction.parse(string)) ?? (try? withoutFraction.parse(string))
    }
}
