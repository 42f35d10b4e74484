import CConcordSystem
import Glibc

/// Why the server could not start, as one line for the operator.
public struct TransportError: Error, CustomStringConvertible, Sendable {
    /// e.g. "cannot listen on 0.0.0.0:8080: address already in use".
    public var message: String
    public init(_ message: String) { self.message = message }
    public var description: String { self.message }
}

/// A resolved socket address, IPv4 or IPv6, kept as raw `sockaddr_storage`.
struct SocketAddress {
    var storage: sockaddr_storage
    var length: socklen_t
    var family: Int32 { Int32(self.storage.ss_family) }

    /// Resolves `host` for listening. Literals are parsed without DNS; names (e.g.
    /// `localhost`) go through `getaddrinfo`, preferring IPv4 so that `localhost`
    /// answers on 127.0.0.1 where most clients look first.
    static func resolve(host: String, port: Int) throws(TransportError) -> SocketAddress {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = concord_SOCK_STREAM
        hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV
        var list: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(host.isEmpty ? nil : host, String(port), &hints, &list)
        guard status == 0, let first = list else {
            let reason = status == 0 ? "no address" : String(cString: gai_strerror(status)).lowercased()
            throw TransportError("cannot listen on \(SocketAddress.display(host: host, port: port)): cannot resolve host: \(reason)")
        }
        defer { freeaddrinfo(list) }
        var chosen: UnsafeMutablePointer<addrinfo>? = nil
        var cursor: UnsafeMutablePointer<addrinfo>? = first
        while let entry = cursor {
            if entry.pointee.ai_family == AF_INET { chosen = entry; break }
            if chosen == nil && entry.pointee.ai_family == AF_INET6 { chosen = entry }
            cursor = entry.pointee.ai_next
        }
        guard let entry = chosen, let addr = entry.pointee.ai_addr else {
            throw TransportError("cannot listen on \(SocketAddress.display(host: host, port: port)): no IPv4 or IPv6 address")
        }
        var storage = sockaddr_storage()
        let length = entry.pointee.ai_addrlen
        withUnsafeMutableBytes(of: &storage) { dst in
            dst.copyMemory(from: UnsafeRawBufferPointer(start: addr, count: Int(length)))
        }
        return SocketAddress(storage: storage, length: length)
    }

    /// `host:port`, with brackets around IPv6 literals.
    static func display(host: String, port: Int) -> String {
        host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
    }
}

/// Creates, binds and listens on a non-blocking, close-on-exec TCP socket.
/// Returns the descriptor and the bound port (port 0 → the kernel's ephemeral port).
func makeListener(host: String, port: Int, backlog: Int32 = 4096) throws(TransportError) -> (fd: Int32, port: Int) {
    let display = SocketAddress.display(host: host, port: port)
    guard (0...65535).contains(port) else { throw TransportError("cannot listen on \(display): port out of range") }
    var address = try SocketAddress.resolve(host: host, port: port)
    let fd: Int32
    do {
        fd = try syscallBlocking("socket") { socket(address.family, concord_SOCK_STREAM | concord_SOCK_NONBLOCK | concord_SOCK_CLOEXEC, 0) }
    } catch {
        throw TransportError("cannot listen on \(display): \(SystemError.describe(error.errno))")
    }
    do {
        var one: Int32 = 1
        // SO_REUSEADDR: restart without waiting out TIME_WAIT from the previous run.
        _ = try syscallBlocking("setsockopt") { setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size)) }
        if address.family == AF_INET6 {
            // "::" should take IPv4 clients too, whatever the system default says.
            var zero: Int32 = 0
            _ = try syscallBlocking("setsockopt") { setsockopt(fd, Int32(IPPROTO_IPV6), IPV6_V6ONLY, &zero, socklen_t(MemoryLayout<Int32>.size)) }
        }
        let length = address.length
        _ = try syscallBlocking("bind") {
            withUnsafePointer(to: &address.storage) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) } }
        }
        _ = try syscallBlocking("listen") { listen(fd, backlog) }
        var bound = sockaddr_storage()
        var boundLength = socklen_t(MemoryLayout<sockaddr_storage>.size)
        _ = try syscallBlocking("getsockname") {
            withUnsafeMutablePointer(to: &bound) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &boundLength) } }
        }
        let boundFamily = Int32(bound.ss_family)
        let boundPort: Int = withUnsafePointer(to: &bound) { pointer in
            if boundFamily == AF_INET6 {
                return pointer.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { Int(UInt16(bigEndian: $0.pointee.sin6_port)) }
            }
            return pointer.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { Int(UInt16(bigEndian: $0.pointee.sin_port)) }
        }
        return (fd, boundPort)
    } catch {
        closeDescriptor(fd)
        throw TransportError("cannot listen on \(display): \(SystemError.describe(error.errno))")
    }
}

/// Per-connection socket options: Nagle off, because every response is written whole
/// in one `send` and waiting for an ACK before the next would only add latency.
@inline(__always)
func configureAcceptedSocket(_ fd: Int32) {
    var one: Int32 = 1
    _ = setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
}
