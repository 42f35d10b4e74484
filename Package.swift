// swift-tools-version:6.1
// Concord: one SwiftPM package, no package dependencies (see README.md).
// Modules are layers; dependencies point one way:
//   ConcordJSON, ConcordObservability  <-  ConcordHTTP  <-  ConcordTransport
//   ConcordDomain  <-  ConcordStorage (CSQLite)
//   everything  <-  ConcordApp  <-  concord
import PackageDescription

let package = Package(
    name: "Concord",
    products: [
        .executable(name: "concord", targets: ["concord"]),
        // Exposed so the separate Benchmarks/ package can measure the JSON codec in-process.
        .library(name: "ConcordJSON", targets: ["ConcordJSON"]),
    ],
    targets: [
        // System libraries and C shims.
        .systemLibrary(
            name: "CSQLite",
            pkgConfig: "sqlite3",
            providers: [.apt(["libsqlite3-dev"])]
        ),
        .target(name: "CConcordSystem"),

        // Pure layers.
        .target(name: "ConcordJSON"),
        .target(name: "ConcordObservability"),
        .target(name: "ConcordHTTP", dependencies: ["ConcordJSON"]),
        .target(name: "ConcordDomain"),

        // I/O layers.
        .target(name: "ConcordTransport", dependencies: ["CConcordSystem", "ConcordHTTP"]),
        .target(name: "ConcordStorage", dependencies: ["CSQLite", "ConcordDomain"]),

        // Wiring.
        .target(
            name: "ConcordApp",
            dependencies: [
                "ConcordJSON", "ConcordHTTP", "ConcordTransport", "ConcordObservability",
                "ConcordDomain", "ConcordStorage", "CSQLite",
            ]
        ),
        .executableTarget(name: "concord", dependencies: ["ConcordApp"]),

        // Tests mirror the modules.
        .testTarget(name: "ConcordJSONTests", dependencies: ["ConcordJSON"]),
        .testTarget(name: "ConcordHTTPTests", dependencies: ["ConcordHTTP", "ConcordJSON"]),
        .testTarget(name: "ConcordObservabilityTests", dependencies: ["ConcordObservability"]),
        .testTarget(name: "ConcordTransportTests", dependencies: ["ConcordTransport", "ConcordHTTP", "CConcordSystem"]),
        .testTarget(name: "ConcordDomainTests", dependencies: ["ConcordDomain", "ConcordStorage"]),
        .testTarget(name: "ConcordStorageTests", dependencies: ["ConcordStorage", "ConcordDomain", "CSQLite"]),
        .testTarget(
            name: "ConcordAppTests",
            dependencies: ["ConcordApp", "ConcordJSON", "ConcordHTTP", "ConcordDomain", "ConcordStorage", "CConcordSystem"]
        ),
    ]
)
