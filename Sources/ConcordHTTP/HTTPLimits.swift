/// Size limits the request parser enforces. Each one answers with its own
/// status so a client learns which limit it hit.
public struct HTTPLimits: Sendable {
    /// Longest request line (method, target and version, without CRLF). Over it: `414 uriTooLong`.
    public var maxRequestLineBytes: Int
    /// Largest header section (every field line with its line ending, plus the empty line).
    /// Over it: `431 headersTooLarge`. Chunked trailers get the same budget of their own.
    public var maxHeaderBytes: Int
    /// Most header fields in one request. Over it: `431 headersTooLarge`. Trailers likewise.
    public var maxHeaderCount: Int
    /// Largest body, checked against Content-Length before any body byte is read and against
    /// the running total of chunk sizes. Over it: `413 payloadTooLarge`.
    public var maxBodyBytes: Int
    /// Said after the byte count when a body passes `maxBodyBytes` (which setting to raise, or
    /// what to send instead); nil: the byte count alone.
    public var bodyLimitAdvice: String?

    /// Defaults: 8 KiB request line, 16 KiB header section, 128 fields, 64 MiB body.
    public init(
        maxRequestLineBytes: Int = 8 * 1024,
        maxHeaderBytes: Int = 16 * 1024,
        maxHeaderCount: Int = 128,
        maxBodyBytes: Int = 64 * 1024 * 1024
    ) {
        self.maxRequestLineBytes = maxRequestLineBytes
        self.maxHeaderBytes = maxHeaderBytes
        self.maxHeaderCount = maxHeaderCount
        self.maxBodyBytes = maxBodyBytes
    }
}
