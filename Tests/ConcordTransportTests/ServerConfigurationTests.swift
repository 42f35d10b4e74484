@testable import ConcordTransport
import Glibc
import Testing

/// How many cores the server sizes its threads for.
@Suite struct CoreCountTests {
    @Test(arguments: [
        ("max 100000\n", nil),
        ("200000 100000\n", 2),
        ("150000 100000", 2),     // 1.5 cores: rounded up
        ("50000 100000\n", 1),    // half a core: at least one
        ("100000 100000\n", 1),
        ("", nil),
        ("garbage", nil),
        ("0 100000", nil),
    ] as [(String, Int?)])
    func cgroupQuotaInWholeCores(_ cpuMax: String, _ cores: Int?) {
        #expect(ServerConfiguration.cgroupCPUQuota(cpuMax) == cores)
    }

    /// Under `taskset -c 0` (as the benchmarks pin the server) this process sees one core; here,
    /// at least one and never more than the processors online.
    @Test func coreCountIsWithinTheOnlineProcessors() {
        let online = sysconf(Int32(_SC_NPROCESSORS_ONLN))
        #expect(ServerConfiguration.coreCount >= 1)
        #expect(ServerConfiguration.coreCount <= max(1, online))
    }
}
