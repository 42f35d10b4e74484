// swift-tools-version:6.1
// Concord fuzzing: a separate package so that the server itself keeps no package
// dependencies. One libFuzzer executable per parser; build and run them with `Fuzz/run`
// (see Fuzz/README.md). Built with `-sanitize=fuzzer,address -parse-as-library`: each harness
// defines `LLVMFuzzerTestOneInput` and libFuzzer supplies `main`.
import PackageDescription

let package = Package(
    name: "ConcordFuzz",
    // No products: SwiftPM makes one executable per executable target of this (root) package,
    // which is all Fuzz/run builds and runs.
    dependencies: [
        .package(name: "Concord", path: ".."),
    ],
    targets: [
        // The driver every harness runs (libFuzzer's, see runFuzzer) and the property checks'
        // failure path (message, then abort: libFuzzer keeps the input).
        .target(name: "FuzzSupport", dependencies: ["CFuzzer"]),
        // libFuzzer's LLVMFuzzerRunDriver, declared for Swift.
        .target(name: "CFuzzer"),
        .executableTarget(
            name: "fuzz-http",
            dependencies: ["FuzzSupport", .product(name: "ConcordHTTP", package: "Concord")]
        ),
        .executableTarget(
            name: "fuzz-json",
            dependencies: ["FuzzSupport", .product(name: "ConcordJSON", package: "Concord")]
        ),
        .executableTarget(
            name: "fuzz-batch",
            dependencies: [
                "FuzzSupport",
                .product(name: "ConcordJSON", package: "Concord"),
                .product(name: "ConcordDomain", package: "Concord"),
            ]
        ),
        .executableTarget(
            name: "fuzz-cloudid",
            dependencies: ["FuzzSupport", .product(name: "ConcordDomain", package: "Concord")]
        ),
    ]
)
