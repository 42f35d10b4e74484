/// HTTP/1.1 message values shared by the parser, the writer, the transport and the app.
/// Pure data: no I/O here.

/// The protocol version of a request (RFC 9112 §2.3). Only HTTP/1.0 and HTTP/1.1 are served.
public struct HTTPVersion: Sendable, Hashable {
    public var major: Int
    public var minor: Int
    public init(major: Int, minor: Int) { self.major = major; self.minor = minor }
    public static let http1_0 = HTTPVersion(major: 1, minor: 0)
    public static let http1_1 = HTTPVersion(major: 1, minor: 1)
}

/// Header fields in arrival order. Names keep their case as sent; lookups are
/// case-insensitive (RFC 9110 §5.1).
public struct HTTPHeaders: Sendable, Sequence {
    public private(set) var fields: [(name: String, value: String)]

    public init(_ fields: [(name: String, value: String)] = []) { self.fields = fields }

    public mutating func add(name: String, value: String) { self.fields.append((name, value)) }

    /// Replaces every field of that name with one field.
    public mutating func replaceOrAdd(name: String, value: String) {
        self.fields.removeAll { fieldNamesEqual($0.name, name) }
        self.fields.append((name, value))
    }

    /// The first value of `name`, compared case-insensitively.
    public subscript(first name: String) -> String? {
        for field in self.fields where fieldNamesEqual(field.name, name) {
            return field.value
        }
        return nil
    }

    /// Every value of `name`, in order.
    public subscript(all name: String) -> [String] {
        self.fields.filter { fieldNamesEqual($0.name, name) }.map(\.value)
    }

    public func makeIterator() -> IndexingIterator<[(name: String, value: String)]> { self.fields.makeIterator() }
}

/// Case-insensitive name comparison without allocating: ASCII bytes compare with their
/// case folded; a name with any non-ASCII byte falls back to `lowercased()` so the answer
/// is exactly what comparing lowercased strings gives.
@inline(__always)
func fieldNamesEqual(_ a: String, _ b: String) -> Bool {
    guard a.utf8.count == b.utf8.count else { return false }
    var a = a
    var b = b
    let ascii: Bool? = a.withUTF8 { x in
        b.withUTF8 { y in
            var equal = true
            for i in 0..<x.count {
                let p = x[i]
                let q = y[i]
                if p | q >= 0x80 { return nil }
                if p == q { continue }
                // Fold A-Z to a-z; only letters may differ by case.
                let lp = p &- UInt8(ascii: "A") < 26 ? p | 0x20 : p
                let lq = q &- UInt8(ascii: "A") < 26 ? q | 0x20 : q
                // Keep scanning after a mismatch: a later non-ASCII byte means `lowercased()` decides.
                if lp != lq { equal = false }
            }
            return equal
        }
    }
    if let ascii { return ascii }
    return a.lowercased() == b.lowercased()
}

/// A complete request as handed to the application: the head plus the whole body
/// (the transport accumulates the body up to the body limit before dispatching).
public struct HTTPRequest: Sendable {
    /// The method token as sent (case-sensitive, RFC 9110 §9.1), e.g. "GET".
    public var method: String
    /// The request-target as sent, e.g. "/v1/library/objects/abc%2FL0%2F001?x=1".
    public var target: String
    public var version: HTTPVersion
    public var headers: HTTPHeaders
    public var body: [UInt8]

    public init(method: String, target: String, version: HTTPVersion = .http1_1, headers: HTTPHeaders = HTTPHeaders(), body: [UInt8] = []) {
        self.method = method
        self.target = target
        self.version = version
        self.headers = headers
        self.body = body
    }

    /// The target's path, still percent-encoded (everything before `?`). For an absolute-form
    /// target (`http://host/path?q`, RFC 9112 §3.2.2, which a server MUST accept) it is the
    /// path after the authority, `/` when that is empty (RFC 3986 §6.2.3).
    public var path: Substring {
        let rest = self.originForm
        if let q = rest.firstIndex(of: "?") { return rest[..<q] }
        return rest
    }

    /// The target's query, without `?`, still percent-encoded; nil when there is none.
    public var query: Substring? {
        guard let q = self.target.firstIndex(of: "?") else { return nil }
        return self.target[self.target.index(after: q)...]
    }

    /// The target from its path on: the target itself unless it is absolute-form, whose
    /// `scheme://authority` is dropped (the authority ends at the first `/` or `?`).
    private var originForm: Substring {
        let target = self.target[...]
        guard let first = target.utf8.first, first != UInt8(ascii: "/"), first != UInt8(ascii: "*"),
              let colon = target.firstIndex(of: ":")
        else { return target }
        let afterColon = target[target.index(after: colon)...]
        guard afterColon.hasPrefix("//") else { return target }
        let authority = afterColon.dropFirst(2)
        guard let end = authority.firstIndex(where: { $0 == "/" || $0 == "?" }) else { return "/" }
        if authority[end] == "?" { return Substring("/" + authority[end...]) }
        return authority[end...]
    }
}

/// A response produced by the application. The writer adds `Date`, `Content-Length`
/// and `Connection` itself; the app sets status, content type, body and anything else.
public struct HTTPResponse: Sendable {
    public var status: Int
    public var headers: HTTPHeaders
    public var body: [UInt8]

    public init(status: Int, headers: HTTPHeaders = HTTPHeaders(), body: [UInt8] = []) {
        self.status = status
        self.headers = headers
        self.body = body
    }
}
