// swift-tools-version:6.1
// Concord benchmarks: a separate package so that the server itself keeps no package
// dependencies. Only this package may depend on Hummingbird (the peer we measure against).
// Run everything with one command: `Benchmarks/run` (see docs/benchmarks.md).
import PackageDescription

let package = Package(
    name: "ConcordBenchmarks",
    products: [
        .executable(name: "hummingbird-peer", targets: ["hummingbird-peer"]),
        .executable(name: "json-bench", targets: ["json-bench"]),
        .executable(name: "device-sim", targets: ["device-sim"]),
        .executable(name: "micro-bench", targets: ["micro-bench"]),
    ],
    dependencies: [
        // No traits: the default ones pull swift-configuration and change nothing we measure,
        // and every extra package costs minutes of build on the shared 2-core machine.
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.0.0", traits: []),
        .package(name: "Concord", path: ".."),
    ],
    targets: [
        // Fixtures shared by the peer and the in-process benchmarks (identifiers, cloud ids).
        .target(name: "BenchSupport"),
        .executableTarget(
            name: "hummingbird-peer",
            dependencies: [
                "BenchSupport",
                .product(name: "Hummingbird", package: "hummingbird"),
            ]
        ),
        .executableTarget(
            name: "json-bench",
            dependencies: [
                "BenchSupport",
                .product(name: "ConcordJSON", package: "Concord"),
            ]
        ),
        // In-process timings of linear work that `swift test` guards by counting (`Benchmarks/run micro`).
        .executableTarget(
            name: "micro-bench",
            dependencies: [
                .product(name: "ConcordDomain", package: "Concord"),
                .product(name: "ConcordHTTP", package: "Concord"),
            ]
        ),
        // Simulated devices against a running Concord (and the peer): its own raw-socket client.
        .executableTarget(
            name: "device-sim",
            dependencies: [
                .product(name: "ConcordJSON", package: "Concord"),
                // SHA-256 of the synthetic photos: the server's own implementation.
                .product(name: "ConcordDomain", package: "Concord"),
            ]
        ),
    ]
)
