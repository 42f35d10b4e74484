import ConcordDomain
import ConcordMappingIndex
import ConcordStorage
import ConcordTestSupport
import Foundation
import Testing

/// A clock tests move by hand (history age).
final class ManualClock: @unchecked Sendable {
    // @unchecked Sendable: `current` is only read and written while holding `lock`.
    private let lock = NSLock()
    private var current = Date(timeIntervalSince1970: 1_800_000_000)
    var now: Date { self.lock.withLock { self.current } }
    func advance(_ seconds: Double) { self.lock.withLock { self.current += seconds } }
}

/// A fresh database of `engine` per test (TestDatabase), a service on it, one account with devices.
final class TestEnv {
    let database: TestDatabase
    var store: any ConcordStore { self.database.store }
    let service: ConcordService
    let clock = ManualClock()
    let account: CreatedAccount

    init(_ engine: TestEngine, configuration: DomainConfiguration = DomainConfiguration()) throws {
        self.database = try TestDatabase(engine)
        let clock = self.clock
        self.service = try ConcordService(store: self.database.store, configuration: configuration, clock: { clock.now })
        self.account = try self.service.accounts.createAccount(name: "Test")
    }

    /// A `TestEnv` whose configuration `configure` adjusts from the defaults.
    convenience init(_ engine: TestEngine, _ configure: (inout DomainConfiguration) -> Void) throws {
        var configuration = DomainConfiguration()
        configure(&configuration)
        try self.init(engine, configuration: configuration)
    }

    /// A fresh `TestEnv` and two devices of its account, "A" then "B": how most two-device tests begin.
    static func twoDevices(_ engine: TestEngine) throws -> (env: TestEnv, a: DeviceRef, b: DeviceRef) {
        let env = try TestEnv(engine)
        return (env, try env.device("A"), try env.device("B"))
    }

    /// A fresh `TestEnv`, one device holding asset "a1" of content 1, and that asset's cloud
    /// identifier: how most one-device mapping tests begin.
    static func oneMappedAsset(_ engine: TestEngine) throws -> (env: TestEnv, d: DeviceRef, c: String) {
        let env = try TestEnv(engine)
        let d = try env.device()
        try env.put(d, assets: [("a1", fp(1))])
        return (env, d, try env.cloudID(d, "a1"))
    }

    /// A new service on the same store (a restart, with the same snapshot directory if any), its
    /// mapping index given `budget` bytes (0: no index) and `inlineLoadObjects` if set.
    func restartedService(budget: Int = 256 << 20, inlineLoadObjects: Int? = nil) throws -> ConcordService {
        var configuration = self.service.configuration
        configuration.mappingIndexBytes = budget
        if let inlineLoadObjects { configuration.mappingIndexInlineLoadObjects = inlineLoadObjects }
        let clock = self.clock
        return try ConcordService(store: self.store, configuration: configuration, clock: { clock.now })
    }

    /// A service on a second store of the same database (another instance), on the same clock.
    func anotherInstance() throws -> ConcordService {
        let clock = self.clock
        return try ConcordService(store: try self.database.openAnotherStore(), configuration: self.service.configuration, clock: { clock.now })
    }

    /// A new device of the test account (or of `accountID`).
    func device(_ name: String = "device", accountID: String? = nil) throws -> DeviceRef {
        let id = accountID ?? self.account.accountID
        let d = try self.service.accounts.createDevice(accountID: id, name: name, platform: "test")
        return DeviceRef(accountID: id, deviceID: d.deviceID)
    }

    /// Upserts assets (id, fingerprint) on `device`.
    @discardableResult
    func put(_ device: DeviceRef, assets: [(String, String)]) throws -> LibraryChangeResult {
        try self.service.library.applyChanges(LibraryChangeRequest(assets: LibraryChangePart(upsert: assets.map { .asset($0.0, fingerprint: $0.1) })), device: device)
    }

    func cloud(_ device: DeviceRef, _ ids: [String]) throws -> [MappingResult] {
        try self.service.mapping.cloudIdentifiers(forLocalIdentifiers: ids, device: device).map(\.result)
    }

    func local(_ device: DeviceRef, _ ids: [String]) throws -> [MappingResult] {
        try self.service.mapping.localIdentifiers(forCloudIdentifiers: ids, device: device).map(\.result)
    }

    /// The cloud identifier of one local identifier, failing the test otherwise.
    func cloudID(_ device: DeviceRef, _ id: String, sourceLocation: SourceLocation = #_sourceLocation) throws -> String {
        let r = try self.cloud(device, [id])
        guard case .found(let c)? = r.first else {
            Issue.record("expected a cloud identifier for \(id), got \(r)", sourceLocation: sourceLocation)
            return ""
        }
        return c
    }
}

/// A valid fingerprint for content `n` (base64url SHA-256, 43 characters), short for the suites' tables.
func fp(_ n: Int) -> String { contentFingerprint(n) }

/// Expects `body` to throw exactly `expected`.
func expectError<T>(_ expected: DomainError, sourceLocation: SourceLocation = #_sourceLocation, _ body: () throws -> T) {
    do {
        let value = try body()
        Issue.record("expected \(expected), got \(value)", sourceLocation: sourceLocation)
    } catch let e as DomainError {
        #expect(e == expected, sourceLocation: sourceLocation)
    } catch {
        Issue.record("expected \(expected), got \(error)", sourceLocation: sourceLocation)
    }
}

/// Expects `body` to throw a DomainError with this contract name.
func expectErrorNamed<T>(_ name: String, sourceLocation: SourceLocation = #_sourceLocation, _ body: () throws -> T) {
    do {
        let value = try body()
        Issue.record("expected \(name), got \(value)", sourceLocation: sourceLocation)
    } catch let e as DomainError {
        #expect(e.name == name, "got \(e)", sourceLocation: sourceLocation)
    } catch {
        Issue.record("expected \(name), got \(error)", sourceLocation: sourceLocation)
    }
}

/// Says, in the test output, that the PostgreSQL cases of the engine-parameterised suites did not run.
@Test(.enabled(if: TestEngine.postgresAvailable, Comment(rawValue: TestEngine.postgresSkipReason + " (the postgres cases of AccountTests, LibraryTests, HistoryTests, ConvergenceTests, SharedDatabaseTests, LargeLibraryTests, LocalToCloudTests, CloudToLocalTests, LinkTests, LinkDroppingTests, AuthorizationTests, TwoInstanceTests, MembershipCascadeTests, JournalTests, JournalSelectionTests, JournalChangeFeedTests)")))
func postgresEngineCasesRun() throws {
    let env = try TestEnv(.postgres)
    #expect(env.database.engine == .postgres)
    #expect(try env.service.accounts.listDevices(accountID: env.account.accountID).isEmpty)
}
