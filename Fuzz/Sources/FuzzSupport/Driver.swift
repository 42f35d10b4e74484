import CFuzzer

/// The command line `<module>_main` receives, as C passes it.
public typealias FuzzArguments = UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?

/// Runs libFuzzer's driver (its whole command line: corpus folders, `-max_total_time`, `-jobs`, …)
/// with `testOneInput`, the harness's `LLVMFuzzerTestOneInput`.
///
/// Every harness calls this from its `<module>_main` (`fuzz_http_main`, …): SwiftPM on Linux links
/// each executable with `--defsym main=<module>_main`, so that symbol has to exist, and it stands
/// in for libFuzzer's own `main` (see Fuzz/README.md).
public func runFuzzer(_ argc: Int32, _ argv: FuzzArguments, testOneInput: @convention(c) (UnsafePointer<UInt8>?, Int) -> Int32) -> Int32 {
    var argc = argc
    var argv = argv
    return LLVMFuzzerRunDriver(&argc, &argv, testOneInput)
}
