import Dispatch
import Glibc

/// Host name lookups with a deadline. `getaddrinfo` has none, so it runs on a global queue and the
/// caller waits at most `timeout`; a lookup still running then is abandoned (it finishes on its own
/// thread within the resolver's own timeouts, and its answer is dropped).
enum Resolver {
    /// The host's addresses, each once, in the resolver's order; an IP literal (IPv6 without
    /// brackets) is its own address. Nil when the lookup failed or took longer than `timeout`.
    static func addresses(of host: String, timeout: Double) -> [IPAddress]? {
        if let literal = IPAddress(host) { return [literal] }
        let box = ResultBox()
        let done = DispatchSemaphore(value: 0)
        DispatchQueue.global(qos: .utility).async {
            box.set(lookUp(host))
            done.signal()
        }
        guard done.wait(timeout: .now() + max(0, timeout)) == .success else { return nil }
        return box.get()
    }

    /// One blocking `getaddrinfo` for stream sockets of any family.
    static func lookUp(_ host: String) -> [IPAddress]? {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(host, nil, &hints, &list) == 0 else { return nil }
        defer { freeaddrinfo(list) }
        var result: [IPAddress] = []
        var cursor = list
        while let entry = cursor {
            if let sockaddr = entry.pointee.ai_addr, let address = IPAddress(sockaddr: sockaddr),
               !result.contains(address) {
                result.append(address)
            }
            cursor = entry.pointee.ai_next
        }
        return result
    }

    /// Hands the lookup's answer across threads.
    private final class ResultBox: @unchecked Sendable {  // guarded by `lock`
        private let lock = PthreadLock()
        private var value: [IPAddress]?
        func set(_ value: [IPAddress]?) { self.lock.withLock { self.value = value } }
        func get() -> [IPAddress]? { self.lock.withLock { self.value } }
    }
}

/// A pthread mutex: the module keeps to Glibc and Dispatch.
final class PthreadLock: @unchecked Sendable {  // the mutex is the synchronisation
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    init() {
        self.mutex = .allocate(capacity: 1)
        pthread_mutex_init(self.mutex, nil)
    }
    deinit {
        pthread_mutex_destroy(self.mutex)
        self.mutex.deallocate()
    }
    func withLock<T>(_ body: () throws -> T) rethrows -> T {
        pthread_mutex_lock(self.mutex)
        defer { pthread_mutex_unlock(self.mutex) }
        return try body()
    }
}

extension IPAddress {
    /// The address of an `AF_INET` or `AF_INET6` socket address; nil for any other family.
    init?(sockaddr pointer: UnsafePointer<sockaddr>) {
        switch Int32(pointer.pointee.sa_family) {
        case AF_INET:
            let bytes = pointer.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { v4 in
                withUnsafeBytes(of: v4.pointee.sin_addr) { Array($0) }
            }
            self.init(bytes: bytes)
        case AF_INET6:
            let bytes = pointer.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { v6 in
                withUnsafeBytes(of: v6.pointee.sin6_addr) { Array($0) }
            }
            self.init(bytes: bytes)
        default:
            return nil
        }
    }
}
