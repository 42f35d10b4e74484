import ConcordDomain
import ConcordHTTP
import ConcordJSON
import ConcordObservability
import ConcordStorage
import ConcordTransport

/// Every setting of a Concord process, one typed struct per layer. Each default is the one
/// its layer declares (`HTTPLimits`, `ServerConfiguration`, `DomainConfiguration`,
/// `SQLiteMemory`), read from there rather than written again; they are the documented
/// defaults (Config/concord.json, docs/configuration.md).
public struct Configuration: Sendable, Equatable {
    /// Request limits.
    public struct Limits: Sendable, Equatable {
        public var requestLineBytes = HTTPLimits().maxRequestLineBytes
        public var headerBytes = HTTPLimits().maxHeaderBytes
        public var headerCount = HTTPLimits().maxHeaderCount
        public var bodyBytes = HTTPLimits().maxBodyBytes
        /// The body limit of routes that take no manifest or batch (accounts, devices, journals' titles, links).
        public var smallBodyBytes = 256 * 1024
        /// Elements (array items and object members) a manifest or change body may hold while it is parsed.
        public var jsonElements = 16_000_000
        /// Objects a `PUT /v1/library` manifest may list.
        public var libraryItems = 1_000_000
        /// Request body bytes held at once across connections; a body over it gets `503` unread.
        public var bodyBytesInFlight = ServerConfiguration(host: "", port: 0).maxBodyBytesInFlight
        /// Items in one mapping request.
        public var maxBatch = DomainConfiguration().maxBatch
        public var maxConnections = ServerConfiguration().maxConnections
        /// Connections served at once from one client address (0: no cap of its own); trusted proxies are not capped.
        public var maxConnectionsPerAddress = ServerConfiguration().maxConnectionsPerAddress
        public init() {}
    }

    /// Timeouts, in seconds.
    public struct Timeouts: Sendable, Equatable {
        public var headerRead = ServerConfiguration().headerReadTimeout
        public var bodyRead = ServerConfiguration().bodyReadTimeout
        /// Slowest average body rate (bytes per second, 0: none), judged after `bodyRateGrace` seconds.
        public var minBodyRate = ServerConfiguration().minBodyRate
        public var bodyRateGrace = ServerConfiguration().bodyRateGrace
        public var idle = ServerConfiguration().idleTimeout
        /// Seconds a response may wait for a client that stopped reading; then close.
        public var write = ServerConfiguration().writeTimeout
        /// How long in-flight requests get to finish on SIGTERM/SIGINT.
        public var shutdownGrace: Double = 10
        public init() {}
    }

    /// The scheduling policy of the threads that trade requests: the event loops and the compute pool.
    public enum ThreadScheduling: String, Sendable, Equatable {
        /// Linux `SCHED_BATCH`: a thread woken does not preempt the one running on its core.
        case batch
        /// The system's default policy.
        case normal
    }

    /// The HTTP listener.
    public struct Server: Sendable, Equatable {
        public var host = ServerConfiguration().host
        public var port = ServerConfiguration().port
        /// Event loops; 0 means one per core.
        public var eventLoops = 0
        /// How the loops and the compute pool's threads are scheduled (`ServerConfiguration.batchScheduling`).
        public var threadScheduling = ThreadScheduling.batch
        public var limits = Limits()
        public var timeouts = Timeouts()
        /// Reverse proxies whose `Forwarded` / `X-Forwarded-For` names the client;
        /// those headers from any other peer are ignored.
        public var trustedProxies: [IPAddressRange] = []
        public init() {}
    }

    /// How much change history is kept before old change tokens expire.
    public struct History: Sendable, Equatable {
        public var maxChanges = DomainConfiguration().historyMaxChanges
        public var maxAgeDays = Int(DomainConfiguration().historyMaxAge / (24 * 3600))
        public init() {}
    }

    /// Request rates: token buckets per client address and per caller (device or
    /// account), each allowing `burstSeconds` of its rate at once; 0 turns one off.
    public struct RateLimits: Sendable, Equatable {
        /// Requests per second from one IP address (service endpoints not counted).
        public var perAddress = 20_000.0
        /// Requests per second from one device or account, once its token is known.
        public var perCaller = 10_000.0
        public var burstSeconds = 2.0
        /// What one failed authentication (`401`) costs its address, in requests: with the
        /// defaults an address may fail about 400 times a second before it gets `429`.
        public var failedAuthCost = 50.0
        public init() {}
    }

    /// Long-polls of the change feeds.
    public struct LongPoll: Sendable, Equatable {
        /// The longest `wait=` a poll is held, in seconds; a longer one is shortened to this.
        public var maxWaitSeconds = 60.0
        /// Polls held at once; a poll beyond it is answered at once, like one without `wait`.
        public var maxWaiting = 10_000
        /// Polls one account may have held at once (its share of `maxWaiting`; 0: no share of its own).
        public var maxWaitingPerAccount = 100
        public init() {}
    }

    /// Webhooks: who may be called, the key secrets are sealed under, and delivery's settings.
    public struct Webhooks: Sendable, Equatable {
        /// Host names, IP addresses and CIDR blocks trusted for `http` and for non-public addresses.
        public var allowedHosts: [String] = []
        /// 64 hexadecimal characters; nil: generated on first start into `webhook-key` beside the SQLite file.
        public var secretKey: String? = nil
        public var settings = WebhookSettings()
        public init() {}
    }

    /// Where the data lives.
    public enum Database: Sendable, Equatable, CustomStringConvertible {
        case sqlite(path: String)
        case postgres(url: String)

        /// Parses `sqlite:PATH`, a bare path (SQLite), or `postgres://…` / `postgresql://…`.
        public init?(parsing text: String) {
            if text.hasPrefix("sqlite:") {
                let path = String(text.dropFirst("sqlite:".count))
                guard !path.isEmpty else { return nil }
                self = .sqlite(path: path)
            } else if text.hasPrefix("postgres://") || text.hasPrefix("postgresql://") {
                guard text.split(separator: "/", omittingEmptySubsequences: true).count >= 2 else { return nil }
                self = .postgres(url: text)
            } else if !text.isEmpty, !text.contains("://") {
                self = .sqlite(path: text)
            } else {
                return nil
            }
        }

        /// The text form, with a PostgreSQL password masked (safe to log).
        public var description: String {
            switch self {
            case .sqlite(let path): return "sqlite:" + path
            case .postgres(let url):
                // postgres://user:password@host → postgres://user:***@host
                guard let at = url.lastIndex(of: "@"), let scheme = url.range(of: "://"),
                      let colon = url[scheme.upperBound..<at].firstIndex(of: ":") else { return url }
                return String(url[..<url.index(after: colon)]) + "***" + String(url[at...])
            }
        }
    }

    public var server = Server()
    public var database = Database.sqlite(path: "./data/concord.sqlite")
    /// PostgreSQL connections each process keeps at most; 0 means one per worker.
    public var databasePoolSize = 0
    /// The admin token; nil means "generate one on first start and keep it in the data directory".
    public var adminToken: String? = nil
    /// The bearer token `GET /metrics` asks for; nil: `/metrics` is open to anyone.
    public var metricsToken: String? = nil
    public var logLevel = LogLevel.info
    public var history = History()
    public var rateLimits = RateLimits()
    public var longPoll = LongPoll()
    public var webhooks = Webhooks()
    /// Per-account quotas.
    public var quotas = Quotas()
    /// Byte bounds on kept idempotency answers, history and journal answers:
    /// `quotas.idempotencyBytesPerAccount`, `history.maxBytesPerDevice`, `server.limits.journalAnswerBytes`.
    public var dataBounds = DataBounds()
    /// Threads for requests that touch storage; 0 means two per core (at least 4).
    public var workers = 0
    /// SQLite's `PRAGMA synchronous` for the writer: `normal` survives a crash of the process
    /// (kill -9), `full` also survives a power loss, at one fsync per commit.
    public var sqliteSynchronous = SQLiteSynchronous.normal
    /// SQLite page cache per connection (the writer and each reader), in MiB.
    public var sqliteCacheMegabytes = SQLiteMemory().cacheKiB / 1024
    /// How much of the SQLite file is read through a memory map, in MiB (0: none).
    public var sqliteMmapMegabytes = SQLiteMemory().mmapBytes >> 20
    /// Memory the in-memory mapping index may hold, in MiB (0: off, every mapping read from storage).
    /// By default a quarter of the memory the process may use (its cgroup's limit or the machine's).
    public var mappingIndexMegabytes = MemoryLimit.indexMegabytes
    /// Where the mapping index saves its accounts at shutdown and loads them from at the next start:
    /// a directory, `auto` (beside a SQLite database: its path followed by `-index`; none with
    /// PostgreSQL), or `off`.
    public var mappingIndexSnapshots = "auto"
    /// Seconds between the background saves of settled accounts' snapshots (0: at shutdown only).
    public var mappingIndexSnapshotSeconds = 60
    /// Accounts with more objects than this and no current snapshot load into the mapping index off
    /// the request path, storage answering meanwhile (0: all such loads).
    public var mappingIndexInlineLoadObjects = DomainConfiguration().mappingIndexInlineLoadObjects

    public init() {}
}

extension Configuration.Limits {
    /// Elements `POST /v1/library/changes` may parse: room for `maxBatch` items of up
    /// to 16 elements each, more only as the body's size allows (`JSONValue.elementBound`: a
    /// body's tree stays within a small multiple of it), never more than `jsonElements`.
    public func changeElements(bodyBytes: Int) -> Int {
        JSONValue.elementBound(forBytes: bodyBytes, floor: self.maxBatch * 16 + 1024, ceiling: self.jsonElements)
    }

    /// Elements `PUT /v1/library` may parse: as many as the body's size allows
    /// (`JSONValue.elementBound`), at least 65 536, never more than `jsonElements`.
    public func manifestElements(bodyBytes: Int) -> Int {
        JSONValue.elementBound(forBytes: bodyBytes, floor: 1 << 16, ceiling: self.jsonElements)
    }
}

/// The durability level of SQLite commits (see docs/configuration.md).
public enum SQLiteSynchronous: String, Sendable, Equatable {
    case normal, full
}
