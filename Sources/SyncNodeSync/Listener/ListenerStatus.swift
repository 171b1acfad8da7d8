/// What a listener has done since it started.
public struct ListenerStatus: Sendable, Equatable {
    /// Client connections open now (TLS handshakes in progress included).
    public var activeConnections = 0
    /// Connections accepted since start.
    public var totalConnections = 0
    /// Connections refused (503) for being beyond the listener's limits, since start.
    public var refusedConnections = 0
    /// Requests being answered now.
    public var activeRequests = 0
    /// Requests answered since start.
    public var totalRequests = 0
    /// Response body bytes written since start.
    public var bytesSent = 0
    /// Request body bytes read since start.
    public var bytesReceived = 0
}
