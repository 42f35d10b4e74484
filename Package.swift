// swift-tools-version:6.1
// Concord: one SwiftPM package, no package dependencies (see README.md).
// Modules are layers; dependencies point one way:
//   ConcordJSON  <-  ConcordHTTP  <-  ConcordTransport (CConcordSystem);  ConcordObservability
//   ConcordBytes, ConcordSHA256  <-  ConcordDomain  <-  ConcordMappingIndex (CConcordSystem)
//                                    ConcordDomain  <-  ConcordStorage (CSQLite, CLibPQ)
//   ConcordOutbound (CCurl): webhook destinations and delivery, nothing else of ours
//   everything but the C libraries  <-  ConcordApp  <-  concord
import PackageDescription

let package = Package(
    name: "Concord",
    // Apple platforms matter only to ConcordClient: async URLSession needs these (Linux ignores them).
    platforms: [.macOS(.v12), .iOS(.v15), .tvOS(.v15), .watchOS(.v8)],
    products: [
        .executable(name: "concord", targets: ["concord"]),
        // The client library apps add (iOS, macOS, Linux): Foundation only, no other module.
        .library(name: "ConcordClient", targets: ["ConcordClient"]),
        // Exposed so the separate Benchmarks/ package can measure the JSON codec in-process.
        .library(name: "ConcordJSON", targets: ["ConcordJSON"]),
        // Exposed so the separate Fuzz/ package can drive the parsers.
        .library(name: "ConcordHTTP", targets: ["ConcordHTTP"]),
        .library(name: "ConcordDomain", targets: ["ConcordDomain"]),
    ],
    targets: [
        // System libraries and C shims.
        .systemLibrary(
            name: "CSQLite",
            pkgConfig: "sqlite3",
            providers: [.apt(["libsqlite3-dev"])]
        ),
        .systemLibrary(
            name: "CLibPQ",
            pkgConfig: "libpq",
            providers: [.apt(["libpq-dev"])]
        ),
        .systemLibrary(
            name: "CCurl",
            pkgConfig: "libcurl",
            providers: [.apt(["libcurl4-openssl-dev"])]
        ),
        .target(name: "CConcordSystem"),

        // Pure layers.
        .target(name: "ConcordJSON"),
        .target(name: "ConcordObservability"),
        .target(name: "ConcordHTTP", dependencies: ["ConcordJSON"]),
        // Byte formats: packed values, varints, the UUID codec, strings and answers in one buffer.
        .target(name: "ConcordBytes"),
        // SHA-256, shared by the server and the client.
        .target(name: "ConcordSHA256"),
        .target(name: "ConcordDomain", dependencies: ["ConcordBytes", "ConcordSHA256"]),
        // The in-memory mapping index behind the domain's MappingCache/MappingReads; it prefetches
        // (CConcordSystem's one-line wrapper of the compiler builtin).
        .target(name: "ConcordMappingIndex", dependencies: ["ConcordDomain", "ConcordBytes", "CConcordSystem"]),

        // I/O layers.
        .target(name: "ConcordTransport", dependencies: ["CConcordSystem", "ConcordHTTP"]),
        .target(name: "ConcordStorage", dependencies: ["CSQLite", "CLibPQ", "ConcordDomain", "ConcordBytes"]),
        .target(name: "ConcordOutbound", dependencies: ["CCurl"]),

        // Wiring.
        .target(
            name: "ConcordApp",
            dependencies: [
                "ConcordJSON", "ConcordHTTP", "ConcordTransport", "ConcordObservability",
                "ConcordBytes", "ConcordDomain", "ConcordMappingIndex", "ConcordStorage", "CConcordSystem", "ConcordOutbound",
            ]
        ),
        .executableTarget(name: "concord", dependencies: ["ConcordApp"]),

        // Client: nothing of ours but SHA-256 (pure Swift), so it builds wherever Foundation does.
        .target(name: "ConcordClient", dependencies: ["ConcordSHA256"]),
        // docs/client.md's recipe as one program (two devices of one account), run by docs/check-example.
        .executableTarget(name: "concord-example", dependencies: ["ConcordClient"], path: "Sources/ConcordExample"),

        // Tests mirror the modules. ConcordTestSupport: the engines the store/domain/app suites run on,
        // and the synthetic content (fingerprints) the suites share.
        .target(name: "ConcordTestSupport", dependencies: ["ConcordStorage", "ConcordDomain", "ConcordMappingIndex"], path: "Tests/ConcordTestSupport"),
        // One send-everything loop for the suites' raw-socket clients and servers.
        .target(name: "ConcordSocketTestSupport", path: "Tests/ConcordSocketTestSupport"),
        .testTarget(name: "ConcordJSONTests", dependencies: ["ConcordJSON", "ConcordTestSupport"]),
        .testTarget(name: "ConcordHTTPTests", dependencies: ["ConcordHTTP", "ConcordJSON"]),
        .testTarget(name: "ConcordObservabilityTests", dependencies: ["ConcordObservability"]),
        .testTarget(name: "ConcordTransportTests", dependencies: ["ConcordTransport", "ConcordHTTP", "CConcordSystem", "ConcordSocketTestSupport"]),
        .testTarget(name: "ConcordOutboundTests", dependencies: ["ConcordOutbound", "CCurl", "ConcordSocketTestSupport"]),
        .testTarget(name: "ConcordBytesTests", dependencies: ["ConcordBytes"]),
        .testTarget(name: "ConcordDomainTests", dependencies: ["ConcordDomain", "ConcordMappingIndex", "ConcordStorage", "ConcordTestSupport"]),
        .testTarget(name: "ConcordMappingIndexTests", dependencies: ["ConcordMappingIndex", "ConcordDomain", "ConcordBytes", "ConcordStorage", "ConcordTestSupport"]),
        .testTarget(name: "ConcordStorageTests", dependencies: ["ConcordStorage", "ConcordDomain", "ConcordBytes", "ConcordMappingIndex", "CSQLite", "ConcordTestSupport"]),
        .testTarget(
            name: "ConcordAppTests",
            dependencies: ["ConcordApp", "ConcordJSON", "ConcordHTTP", "ConcordDomain", "ConcordMappingIndex", "ConcordStorage", "CConcordSystem", "CSQLite", "ConcordTestSupport", "ConcordSocketTestSupport"]
        ),
        .testTarget(
            name: "ConcordClientTests",
            dependencies: ["ConcordClient", "ConcordApp", "ConcordTransport", "ConcordHTTP", "ConcordObservability", "ConcordTestSupport"]
        ),
    ]
)
