import Foundation
import Testing

/// A peer that accepts connections and never answers.
enum Tarpit {
    /// A tarpit: a socket on loopback that listens and never reads nor answers; and its port.
    static func open() throws -> (socket: Int32, port: Int) {
        let tarpit = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let bound = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(tarpit, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
        try #require(bound == 0 && listen(tarpit, 16) == 0)
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(tarpit, $0, &length) } }
        return (tarpit, Int(UInt16(bigEndian: address.sin_port)))
    }
}
