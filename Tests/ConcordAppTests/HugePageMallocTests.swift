import Testing

@testable import ConcordApp

/// When `concord serve` starts itself again with huge pages for malloc, and with what environment.
private let restartCases: [(environment: [String: String], thp: String?, glibc: String?, tunables: String?)] = [
    (["PATH": "/bin"], "always [madvise] never", "2.36", nil),                                 // not asked for
    (["CONCORD_MALLOC_HUGE_PAGES": "0"], "always [madvise] never", "2.36", nil),
    (on, "always [madvise] never", "2.36", "glibc.malloc.hugetlb=1"),
    (on.merging(["GLIBC_TUNABLES": "glibc.malloc.arena_max=2"]) { $1 }, "always [madvise] never", "2.36",
     "glibc.malloc.arena_max=2:glibc.malloc.hugetlb=1"),
    (on.merging(["GLIBC_TUNABLES": "glibc.malloc.hugetlb=0"]) { $1 }, "always [madvise] never", "2.36", nil),   // whoever started it chose
    (on, "always [madvise] never", "2.35", "glibc.malloc.hugetlb=1"),
    (on, "[always] madvise never", "2.36", nil),    // every large mapping gets them already
    (on, "always madvise [never]", "2.36", nil),    // none to have
    (on, nil, "2.36", nil),                          // no THP at all (another kernel)
    (on, "always [madvise] never", "2.34", nil),    // glibc without the tunable
    (on, "always [madvise] never", "3.0", "glibc.malloc.hugetlb=1"),
    (on, "always [madvise] never", nil, nil),       // not glibc
]

private let on = ["CONCORD_MALLOC_HUGE_PAGES": "1"]

@Test(arguments: restartCases.indices)
func hugePageMallocRestartsOnlyWhenItHelps(_ index: Int) {
    let c = restartCases[index]
    let restarted = HugePageMalloc.environmentToRestart(c.environment, thpMode: c.thp, glibc: c.glibc)
    #expect(restarted?["GLIBC_TUNABLES"] == c.tunables, "\(c)")
    if let restarted {   // nothing else of the environment changes
        #expect(restarted.filter { $0.key != "GLIBC_TUNABLES" } == c.environment.filter { $0.key != "GLIBC_TUNABLES" })
    }
}
