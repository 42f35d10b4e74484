@testable import ConcordTransport
import CConcordSystem
import ConcordHTTP
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

/// The loops' scheduling policy, read by the responder on the loop thread that calls it.
struct LoopSchedulingTests {
    /// SCHED_BATCH (3) with `batchScheduling`, the default; SCHED_OTHER (0) without.
    @Test(arguments: [(true, Int32(3)), (false, Int32(0))])
    func loopThreadsRunUnderThePolicyConfigured(_ batch: Bool, _ policy: Int32) throws {
        let responder = ClosureResponder { _, respond in
            respond(HTTPResponse(status: 200, body: Array("\(concord_thread_scheduling_policy())".utf8)))
        }
        try withClient({ $0.batchScheduling = batch }, responder: responder) { client in
            let response = try #require(try client.exchange("GET /policy HTTP/1.1\r\nHost: x\r\n\r\n"))
            #expect(response.text == "\(policy)")
        }
    }

    @Test func batchSchedulingIsTheDefault() {
        #expect(ServerConfiguration().batchScheduling)
    }
}
